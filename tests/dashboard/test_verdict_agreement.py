"""The request page and ``manage.py explain --json`` say the same of each request: one engine verdict."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session
from projections.cache.explain.verdict import TRANSCRIPT_UNEXPLAINED_REMEDY
from tests.dashboard.logs import write_jsonl
from tests.dashboard.test_analysis import MODEL, START, capture, conversation

SAID = ("label", "detail", "remedy", "material", "badge", "meaning", "warnings")
SESSION_ID = "22222222-aaaa-4bbb-8ccc-000000000002"


def transcript_call(key: str, seconds: int, read: int, write: int) -> list[dict[str, Any]]:
    """One Claude Code turn: the user's line and the assistant's line with the call's usage."""
    at = (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    common = {"sessionId": SESSION_ID, "cwd": "/work", "version": "2.1.39", "isSidechain": False}
    usage = {
        "input_tokens": 50,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": 10,
    }
    message = {
        "id": f"msg_{key}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "Done."}],
        "usage": usage,
    }
    return [
        {
            **common,
            "type": "user",
            "uuid": f"u{key}",
            "timestamp": at,
            "message": {"role": "user", "content": key},
        },
        {
            **common,
            "type": "assistant",
            "uuid": f"a{key}",
            "timestamp": at,
            "requestId": key,
            "message": message,
        },
    ]


def explained(path: Path, format: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("explain", str(path), "--json", "--format", format, stdout=out, stderr=StringIO())
    return [{key: row[key] for key in SAID} for row in json.loads(out.getvalue())]


def shown(client: Client, session: Session) -> list[dict[str, Any]]:
    """Each request page's verdict, in ordinal order, checked against what the page prints."""
    rows = []
    for call in Request.objects.filter(session=session).order_by("ordinal"):
        response = client.get(call.get_absolute_url())
        assert response.status_code == 200
        said = response.context["verdict"]
        assert response.context["remedy"] == said.remedy
        assert escape(said.remedy) in response.content.decode()
        assert f">{escape(said.badge)}</span>" in response.content.decode()
        rows.append({key: value for key, value in said.to_json().items() if key in SAID})
    return rows


def ingested(path: Path, format: str) -> Session:
    summary = ingest_paths(paths=[path], source_name="laptop", format=format)
    assert not summary.errors, summary.errors
    session = Session.objects.get()
    session_analyse(session_id=session.pk)
    return session


def expired() -> list[dict[str, Any]]:
    """Two turns ten minutes apart: the second finds the 5-minute entry gone."""
    first, second = conversation()[:2]
    return [
        first,
        capture(second["request"], key="msg_2", at=START + timedelta(minutes=10), read=0, write=1730),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("records", "label", "remedy"),
    [
        (conversation, "prefix-changed@messages:2", "append corrections as new messages"),
        (expired, "ttl-expired", "after 10 min idle: ttl 1h on the stable prefix would have kept it"),
    ],
    ids=["edited message", "expired entry"],
)
def test_the_request_page_and_explain_give_a_captured_session_the_same_verdicts(
    records: Any, label: str, remedy: str, tmp_path: Path, viewer_client: Client
) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", records())

    on_page = shown(viewer_client, ingested(path, "anthropic-capture"))

    assert on_page == explained(path, "anthropic-capture")
    last = on_page[-1]
    assert last["label"] == label
    assert remedy in last["remedy"]
    assert last["detail"]


@pytest.mark.django_db
def test_the_request_page_and_explain_give_a_transcript_the_same_verdicts(
    tmp_path: Path, viewer_client: Client
) -> None:
    # The second call reads 3,000 of the 12,000 tokens the first one wrote, a minute later.
    lines = transcript_call("1", 0, 0, 12_000) + transcript_call("2", 60, 3_000, 9_700)
    path = write_jsonl(tmp_path / f"{SESSION_ID}.jsonl", lines)

    on_page = shown(viewer_client, ingested(path, "claude-code"))

    assert on_page == explained(path, "claude-code")
    first, second = on_page
    assert first["badge"] == "cold write"  # nothing read, the prompt written: never "no miss"
    assert (second["label"], second["material"], second["remedy"]) == (
        "unexplained",
        True,
        TRANSCRIPT_UNEXPLAINED_REMEDY,
    )
    assert [warning["kind"] for warning in second["warnings"]] == ["unexplained-miss"]
