"""Hostile prompt content, through every importer, is rendered inert and readable on every page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.ingest.files import ingest_paths
from dashboard.models import IngestJob, Request, Session
from tests.dashboard.logs import dsh_lines, write_jsonl

SCRIPT = '<script>alert("xss-script")</script>'
LINK = '<a href="javascript:alert(1)">xss-link</a>'
MARKDOWN_LINK = "[xss-md](javascript:alert(2)) **bold** _em_ `code`"
ENTITIES = "&lt;b&gt;xss-entity&amp;&#x3C;"
IMAGE = "<img src=x onerror=alert(3)>"
LONG = "L" * 3000
PAYLOAD = f"{SCRIPT} {LINK} {MARKDOWN_LINK} {ENTITIES} {IMAGE} {LONG}"

WRAPPING = {("td", "wrap"), ("pre", "content"), ("h1", ""), ("li", ""), ("span", "value"), ("p", "wrap")}
"""Elements whose CSS breaks an unbroken string (overflow-wrap: anywhere in cachescope.css)."""
CSS = Path(__file__).resolve().parents[2] / "static" / "css" / "cachescope.css"


def _dsh(folder: Path) -> None:
    lines = dsh_lines("dsh-hostile", turns=1, system=PAYLOAD)
    lines[0]["title"] = f"title {SCRIPT} {LONG}"
    lines[0]["cwd"] = f"/work/{IMAGE}"
    lines[2]["data"]["content"] = PAYLOAD
    write_jsonl(folder / "dsh-hostile" / "session.jsonl", lines)


def _claude_code(folder: Path) -> None:
    common = {"sessionId": "cc-hostile", "cwd": f"/w/{SCRIPT}", "isSidechain": False}
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 0,
        "output_tokens": 2,
    }
    write_jsonl(
        folder / "claude" / "proj" / "cc-hostile.jsonl",
        [
            {**common, "type": "user", "uuid": "u1", "timestamp": "2026-02-01T10:00:00Z",
             "message": {"role": "user", "content": PAYLOAD}},
            {**common, "type": "assistant", "uuid": "a1", "timestamp": "2026-02-01T10:00:01Z",
             "requestId": "r1", "message": {"id": "m1", "role": "assistant", "model": f"claude-{SCRIPT}",
                         "content": [{"type": "text", "text": PAYLOAD}], "usage": usage}},
        ],
    )  # fmt: skip


def _anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "tools": [{"name": f"tool{SCRIPT}", "description": PAYLOAD, "input_schema": {}}],
        "system": [{"type": "text", "text": PAYLOAD, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": PAYLOAD}]}],
    }


def _anthropic_response(message_id: str) -> dict[str, Any]:
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 0,
        "output_tokens": 3,
    }
    return {"id": message_id, "type": "message", "model": "claude-sonnet-4-5", "usage": usage,
            "content": [{"type": "text", "text": PAYLOAD}]}  # fmt: skip


def _claude_trace(folder: Path) -> None:
    record = {
        "request": {"timestamp": 1748554704.25, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                    "headers": {}, "body": _anthropic_body()},
        "response": {"timestamp": 1748554705.0, "status_code": 200, "headers": {},
                     "body": _anthropic_response("msg_trace")},
        "logged_at": "2025-05-29T23:38:25.0",
    }  # fmt: skip
    write_jsonl(folder / ".claude-trace" / "log-2025-05-29-23-38-24.jsonl", [record])


def _anthropic_capture(folder: Path) -> None:
    record = {
        "started_at": 1772352000000,
        "request": _anthropic_body(),
        "response": _anthropic_response("msg_cap"),
    }
    write_jsonl(folder / "captures" / "anthropic-hostile.jsonl", [record])


def _connectome(folder: Path) -> None:
    record = {
        "type": "call", "kind": "complete", "timestamp": "2026-03-01T12:00:05.000Z", "durationMs": 500,
        "requestSummary": {"model": "claude-opus-4-6", "maxTokens": 10, "messages": 1, "tools": 1},
        "rawRequest": {**_anthropic_body(), "model": "claude-opus-4-6"},
        "rawResponse": _anthropic_response("msg_conn"),
    }  # fmt: skip
    write_jsonl(folder / "connectome" / "llm-calls.2026-03-01T12-00-00-000Z.jsonl", [record])


def _openai_capture(folder: Path) -> None:
    record = {
        "session_id": f"oa-{SCRIPT}",
        "started_at": "2026-03-02T09:00:00Z",
        "request": {"url": "https://api.openai.com/v1/chat/completions",
                    "body": {"model": "gpt-4.1", "messages": [{"role": "system", "content": PAYLOAD},
                                                              {"role": "user", "content": PAYLOAD}]}},
        "response": {"status": 200, "body": {
            "id": "chatcmpl-h", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"message": {"role": "assistant", "content": PAYLOAD}}],
            "usage": {"prompt_tokens": 2048, "completion_tokens": 5,
                      "prompt_tokens_details": {"cached_tokens": 1024}}}},
    }  # fmt: skip
    write_jsonl(folder / "captures" / "openai-hostile.jsonl", [record])


def _bad_line(folder: Path) -> None:
    """A header with a hostile version: its error reason quotes the value on the ingest job page."""
    lines = dsh_lines("dsh-bad-version", turns=1)
    lines[0]["version"] = SCRIPT
    write_jsonl(folder / "dsh-bad-version" / "session.jsonl", lines)


WRITERS: tuple[Callable[[Path], None], ...] = (
    _dsh, _claude_code, _claude_trace, _anthropic_capture, _connectome, _openai_capture, _bad_line,
)  # fmt: skip
FORMATS = ("dsh", "claude-code", "claude-trace", "anthropic-capture", "connectome", "openai-capture")


class _Scan(HTMLParser):
    """Collects script elements, URL attributes, and where each long unbroken run sits."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.urls: list[str] = []
        self.handlers: list[str] = []
        self.unwrapped: list[str] = []
        self.text: list[str] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if name in ("href", "src", "action", "formaction", "hx-get", "hx-post") and value:
                self.urls.append(value)
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}={value}")
        if tag == "script":
            self._script = values
        if tag not in ("br", "img", "input", "meta", "link", "hr"):
            self.stack.append((tag, values.get("class") or ""))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                break
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
            return
        self.text.append(data)
        if "L" * 200 in data and not any(
            (tag, wanted) in WRAPPING and (not wanted or wanted in classes.split())
            for tag, classes in self.stack
            for wanted in [w for t, w in WRAPPING if t == tag]
        ):
            self.unwrapped.append(" > ".join(f"{t}.{c}" if c else t for t, c in self.stack))


def _scan(body: str) -> _Scan:
    scan = _Scan()
    scan.feed(body)
    scan.close()
    return scan


@pytest.fixture
def hostile_fleet(tmp_path: Path) -> IngestJob:
    for write in WRITERS:
        write(tmp_path / "logs")
    job = IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="hostile", paths=[str(tmp_path)])
    ingest_paths(paths=[tmp_path / "logs"], source_name=f"src-{SCRIPT}", job=job)
    return job


def _pages(job: IngestJob) -> list[str]:
    urls = [
        reverse("dashboard:overview"),
        reverse("dashboard:sessions"),
        reverse("dashboard:requests"),
        reverse("dashboard:warnings"),
        reverse("dashboard:ingest_job", args=[job.pk]),
    ]
    for session in Session.objects.all():
        urls.append(reverse("dashboard:session", args=[session.pk]))
        urls.append(reverse("dashboard:session_events", args=[session.pk]))
    urls += [reverse("dashboard:request", args=[pk]) for pk in Request.objects.values_list("pk", flat=True)]
    return urls


@pytest.mark.django_db
def test_every_importer_carried_the_payload_into_the_store(hostile_fleet: IngestJob) -> None:
    assert set(Session.objects.values_list("format", flat=True)) >= set(FORMATS)
    assert Request.objects.filter(has_body=True).count() >= 4


@pytest.mark.django_db
def test_hostile_content_is_inert_on_every_page(hostile_fleet: IngestJob, viewer_client: Client) -> None:
    shown_escaped = 0
    for url in _pages(hostile_fleet):
        response = viewer_client.get(url, headers={"HX-Request": "true"} if url.endswith("/events/") else {})
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "<script>alert" not in body, url
        assert "<img src=x" not in body, url
        assert 'href="javascript:' not in body.lower(), url
        scan = _scan(body)
        for attrs, text in scan.scripts:
            # Only our own files and json_script data islands (which escape < and >) may be scripts.
            assert attrs.get("src", "") or attrs.get("type") == "application/json", (url, attrs)
            assert "alert(" not in text or attrs.get("type") == "application/json", url
            assert "</script" not in text.lower(), url
        assert not [u for u in scan.urls if re.match(r"\s*(javascript|data|vbscript):", u, re.I)], url
        assert not scan.handlers, (url, scan.handlers)
        text = "".join(scan.text)
        if SCRIPT in text:
            shown_escaped += 1
            assert "&lt;script&gt;" in body, url
        if ENTITIES in text:
            # An entity in the log reads as the characters the log holds, not as what they encode.
            assert "&amp;lt;b&amp;gt;xss-entity" in body, url
        assert not scan.unwrapped, (url, scan.unwrapped[:3])
    assert shown_escaped >= 5, "the payload must stay readable, not vanish"


@pytest.mark.django_db
def test_json_data_islands_escape_markup(hostile_fleet: IngestJob, viewer_client: Client) -> None:
    for url in _pages(hostile_fleet):
        scan = _scan(viewer_client.get(url).content.decode())
        for attrs, text in scan.scripts:
            if attrs.get("type") == "application/json":
                assert "<" not in text, url
                json.loads(text)


def test_content_cells_break_long_unbroken_strings() -> None:
    css = CSS.read_text()
    for selector in ("td.wrap", "pre.content", "ul.plain li"):
        rule = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", css)
        assert rule, selector
        assert "overflow-wrap: anywhere" in rule.group(1), selector


def test_the_scan_finds_live_markup_and_unwrapped_runs() -> None:
    scan = _scan(
        f'<div><a href="javascript:x()">a</a><p onclick="x()">{LONG}</p><script>alert(1)</script></div>'
    )
    assert scan.urls == ["javascript:x()"]
    assert scan.handlers == ["p onclick=x()"]
    assert scan.unwrapped == ["div > p"]
    assert scan.scripts == [({}, "alert(1)")]
    assert not _scan(f'<table><tr><td class="wrap small">{LONG}</td></tr></table>').unwrapped
