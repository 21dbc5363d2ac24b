"""The provider's own cache diagnosis beside Cachescope's: stored per request, shown on the request
page and in ``explain --json`` from the one verdict, and a ``provider-disagrees`` warning where the
two cannot both be right.

The pairs follow Anthropic's documented example: the second request changes the system prompt (or
only appends a message) and its response states ``diagnostics.cache_miss_reason``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session, Source, Warning
from tests.dashboard.logs import write_jsonl
from tests.dashboard.test_analysis import START, SYSTEM, body, capture, text, usage_row

FIRST = [{"role": "user", "content": [text("Please read main.py", marked=True)]}]
SECOND = [
    {"role": "user", "content": [text("Please read main.py")]},
    {"role": "assistant", "content": [text("It defines main().")]},
    {"role": "user", "content": [text("And <b>tests.py</b>?", marked=True)]},
]


def diagnosed(reason: str | None, *, system_changes: bool) -> list[dict[str, Any]]:
    """Two captured turns; the second's response states ``reason`` (``None``: diagnostics null).

    The second turn changes the system prompt, or else edits the first user message in place.
    """
    second_system = "Today is Monday. " + SYSTEM if system_changes else SYSTEM
    messages = (
        SECOND if system_changes else [{"role": "user", "content": [text("Read main.py")]}, *SECOND[1:]]
    )
    first = capture(body(FIRST), key="msg_1", at=START, read=0, write=1700)
    second = capture(
        body(messages, system=second_system),
        key="msg_2",
        at=START + timedelta(seconds=30),
        read=0 if system_changes else 1689,
        write=1750 if system_changes else 60,
    )
    first["response"]["diagnostics"] = None
    second["response"]["diagnostics"] = (
        None if reason is None else {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": 1690}}
    )
    return [first, second]


def ingested(path: Path, format: str) -> Session:
    summary = ingest_paths(paths=[path], source_name="proxy", format=format)
    assert not summary.errors, summary.errors
    session = Session.objects.get()
    session_analyse(session_id=session.pk)
    return session


def explained(path: Path, format: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("explain", str(path), "--json", "--format", format, stdout=out, stderr=StringIO())
    rows: list[dict[str, Any]] = json.loads(out.getvalue())
    return rows


def page(client: Client, key: str) -> tuple[Any, str]:
    call = Request.objects.get(key=key)
    response = client.get(call.get_absolute_url())
    assert response.status_code == 200
    return response.context["verdict"], response.content.decode()


def as_trace(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same calls as claude-trace logs them, each response streamed as SSE (``body_raw``)."""
    lines = []
    for record in records:
        message = {**record["response"], "content": []}
        events = [
            {"type": "message_start", "message": message},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}},
            {"type": "message_stop"},
        ]
        stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        lines.append(
            {
                "request": {
                    "timestamp": record["started_at"],
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {"User-Agent": "claude-cli/2.1.39 (external, cli)"},
                    "body": record["request"],
                },
                "response": {"status_code": 200, "headers": {}, "body_raw": stream},
                "logged_at": record["started_at"],
            }
        )
    return lines


@pytest.mark.django_db
def test_a_system_prompt_change_the_provider_calls_system_changed_shows_its_reason_and_no_disagreement(
    tmp_path: Path, viewer_client: Client
) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", diagnosed("system_changed", system_changes=True))
    ingested(path, "anthropic-capture")

    stored = Request.objects.get(key="msg_2")
    assert (stored.provider_miss_reason, stored.provider_missed_tokens) == ("system_changed", 1690)
    said, html = page(viewer_client, "msg_2")
    assert said.provider_diagnosis.reason == "system_changed"
    assert said.first_change.tier == "system"
    assert "system_changed" in html
    assert "they disagree" not in html
    assert not Warning.objects.filter(kind="provider-disagrees").exists()
    rows = explained(path, "anthropic-capture")
    assert rows[1]["provider_diagnosis"] == {"reason": "system_changed", "missed_tokens": 1690}
    assert rows[1]["provider_diagnosis"] == said.to_json()["provider_diagnosis"]
    assert rows[0]["provider_diagnosis"] is None


@pytest.mark.django_db
def test_a_reason_the_bytes_contradict_raises_provider_disagrees_once_per_cause_and_place(
    tmp_path: Path, viewer_client: Client
) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", diagnosed("tools_changed", system_changes=False))
    ingested(path, "anthropic-capture")

    (warning,) = Warning.objects.filter(kind="provider-disagrees")
    assert warning.place == "main: tools_changed vs messages"
    assert warning.message == "the provider says tools_changed, the bytes change first in messages"
    assert warning.count == 1
    assert warning.request is not None
    assert warning.request.key == "msg_2"
    said, html = page(viewer_client, "msg_2")
    assert "they disagree" in html
    assert [w.kind for w in said.warnings] == ["provider-disagrees"]
    rows = explained(path, "anthropic-capture")
    assert [w["kind"] for w in rows[1]["warnings"]] == ["provider-disagrees"]


@pytest.mark.django_db
def test_a_streamed_response_s_reason_is_read_from_message_start(
    tmp_path: Path, viewer_client: Client
) -> None:
    path = write_jsonl(
        tmp_path / "log-trace.jsonl", as_trace(diagnosed("system_changed", system_changes=True))
    )
    ingested(path, "claude-trace")

    stored = Request.objects.get(key="msg_2")
    assert (stored.provider_miss_reason, stored.provider_missed_tokens) == ("system_changed", 1690)
    assert stored.client_version == "claude-code 2.1.39"
    assert Session.objects.get().client_version == "claude-code 2.1.39"
    said, html = page(viewer_client, "msg_2")
    assert said.provider_diagnosis.reason == "system_changed"
    assert "Sent by claude-code 2.1.39" in html
    assert not Warning.objects.filter(kind="provider-disagrees").exists()
    assert explained(path, "claude-trace")[1]["client_version"] == "claude-code 2.1.39"


@pytest.mark.django_db
def test_null_diagnostics_give_no_reason_and_no_warning(tmp_path: Path, viewer_client: Client) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", diagnosed(None, system_changes=True))
    ingested(path, "anthropic-capture")

    assert set(Request.objects.values_list("provider_miss_reason", flat=True)) == {""}
    said, html = page(viewer_client, "msg_2")
    assert said.provider_diagnosis is None
    assert "none stated" in html
    assert not Warning.objects.filter(kind="provider-disagrees").exists()
    assert explained(path, "anthropic-capture")[1]["provider_diagnosis"] is None


@pytest.mark.django_db
def test_a_provider_that_could_not_compare_is_no_disagreement(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "capture.jsonl", diagnosed("previous_message_not_found", system_changes=True)
    )
    ingested(path, "anthropic-capture")

    assert Request.objects.get(key="msg_2").provider_miss_reason == "previous_message_not_found"
    assert not Warning.objects.filter(kind="provider-disagrees").exists()


@pytest.mark.django_db
def test_a_hostile_reason_is_shown_escaped_on_the_request_page_and_the_overview(
    tmp_path: Path, viewer_client: Client
) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    path = write_jsonl(tmp_path / "capture.jsonl", diagnosed(hostile, system_changes=True))
    ingested(path, "anthropic-capture")

    _, html = page(viewer_client, "msg_2")
    overview = viewer_client.get("/", {"range": "all"}).content.decode()
    for shown in (html, overview):
        assert hostile not in shown
        assert "&lt;img src=x onerror=alert(1)&gt;" in shown


@pytest.mark.django_db
def test_beside_a_stated_reason_a_request_stored_without_its_body_has_an_unknown_first_change(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="cc", format="claude-code"
    )
    usage_row(session, 0, START, 0, 12_000)
    second = usage_row(session, 1, START + timedelta(minutes=1), 0, 12_500)
    Request.objects.filter(pk=second.pk).update(
        provider_miss_reason="system_changed", provider_missed_tokens=12_000
    )
    session_analyse(session_id=session.pk)

    verdict, html = page(viewer_client, second.key)

    assert verdict.provider_diagnosis.reason == "system_changed"
    assert "first change</a>: unknown (only the usage of this request was stored" in html
    assert "Unknown: only the usage of this request was stored, not its body" in html
    assert ": none" not in html


@pytest.mark.django_db
def test_the_request_page_counts_units_and_names_each_marker_s_position(
    tmp_path: Path, viewer_client: Client
) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", diagnosed(None, system_changes=False))
    ingested(path, "anthropic-capture")
    call = Request.objects.get(key="msg_2")

    _, html = page(viewer_client, "msg_2")

    assert call.has_body
    first, second = (marker["position"] for marker in call.markers)
    assert f"{len(call.units)} units; " in html
    assert f"cache marker</a> positions {first} (5m), {second} (5m)." in html
    assert "markers at none" not in html
    assert "anthropic · anthropic" not in html
