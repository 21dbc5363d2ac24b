"""A real Claude Code session, told once as telemetry and once as its transcript file (skipped where
the shared logs are absent): the same calls, the same hit rate, the same verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dashboard.access.tokens import token_create
from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session, Source
from tests.dashboard.otlp_payloads import logs_request

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]
TRANSCRIPT = "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def telemetry_of(path: Path, query_source: str = "repl_main_thread") -> list[dict[str, Any]]:
    """The api_request events Claude Code would have exported for the transcript's calls: one per
    message.id + requestId, its usage from the line with the largest output, at its first line's time."""
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    for number, line in enumerate(path.read_text().splitlines()):
        record = json.loads(line)
        message = record.get("message") or {}
        usage = message.get("usage")
        if record.get("type") != "assistant" or not usage or message.get("model") == "<synthetic>":
            continue
        key = (message["id"], record.get("requestId", ""))
        first = calls.setdefault(key, {"line": number, "time": record["timestamp"], "usage": usage})
        if usage.get("output_tokens", 0) >= first["usage"].get("output_tokens", 0):
            first["usage"] = usage
        first.update(
            session=record["sessionId"],
            model=message["model"],
            request_id=record.get("requestId"),
            sidechain=record.get("isSidechain") is True,
        )
    events = []
    for sequence, call in enumerate(sorted(calls.values(), key=lambda c: c["line"])):
        usage = call["usage"]
        attributes = {
            "session.id": call["session"],
            "event.name": "api_request",
            "event.timestamp": call["time"],
            "event.sequence": sequence,
            "model": call["model"],
            "input_tokens": str(usage.get("input_tokens", 0)),
            "output_tokens": str(usage.get("output_tokens", 0)),
            "cache_read_tokens": str(usage.get("cache_read_input_tokens", 0)),
            "cache_creation_tokens": str(usage.get("cache_creation_input_tokens", 0)),
            "request_id": call["request_id"],
            "query_source": query_source,
        }
        if call["sidechain"] and query_source == "repl_main_thread":
            # A subagent's calls carry the session's id and name the agent (monitoring documentation).
            attributes.update({"query_source": "general-purpose", "agent.name": "general-purpose"})
        events.append({"name": "api_request", "time": 0, "attributes": attributes})
    return events


def test_telemetry_and_the_transcript_of_one_real_session_agree(shared_data: Path) -> None:
    events = telemetry_of(shared_data / TRANSCRIPT)
    source = Source.objects.create(name="laptop")
    _token, secret = token_create(source=source, name="seat", created_by=None)
    response = Client().post(
        "/v1/logs",
        data=logs_request(events, version="1.0.108").SerializeToString(),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200
    ingest_paths(paths=[shared_data / TRANSCRIPT], source_name="files")

    telemetry = Session.objects.get(source=source)
    files = Session.objects.filter(source__name="files")
    main = files.get(parent__isnull=True)
    # Claude Code's telemetry keeps a subagent's calls in the session, the transcript reader gives
    # each sidechain a session of its own: the same 20 calls, and the main thread's alike.
    assert telemetry.external_id == main.external_id
    assert telemetry.request_count == sum(files.values_list("request_count", flat=True)) == len(events) == 20
    main_calls = Request.objects.filter(session=telemetry, lineage="main")
    assert sorted(main_calls.values_list("key", "cache_read_tokens")) == sorted(
        main.requests.values_list("key", "cache_read_tokens")
    )
    for session in (telemetry, *files):
        session_analyse(session_id=session.pk)
    verdict = ("key", "analysis__label", "analysis__predicted_read", "analysis__material")
    told = sorted(main_calls.values_list(*verdict))
    assert told == sorted(main.requests.values_list(*verdict))

    # The same file into the telemetry's source joins its session: the main thread's calls are not
    # counted twice (its sidechains become sessions of their own, as from any file).
    again = ingest_paths(paths=[shared_data / TRANSCRIPT], source_name="laptop")
    telemetry.refresh_from_db()
    assert again.duplicates == main.request_count == 10
    assert telemetry.request_count == 20
    assert telemetry.event_count > 0


COMPACTED = "claude-code/4d5611e5-241a-462a-8d15-5122611a9569"


def test_a_real_compaction_told_as_telemetry_gives_the_transcripts_verdicts(shared_data: Path) -> None:
    main_file = shared_data / f"{COMPACTED}.jsonl"
    compact_file = next((shared_data / COMPACTED / "subagents").glob("agent-acompact-*.jsonl"))
    compaction = telemetry_of(compact_file, query_source="compact")
    for event in compaction:  # the compaction call belongs to the conversation it compacts
        event["attributes"]["session.id"] = main_file.stem
    events = [e for e in telemetry_of(main_file) if e["attributes"].get("agent.name") is None] + compaction
    source = Source.objects.create(name="laptop")
    _token, secret = token_create(source=source, name="seat", created_by=None)
    response = Client().post(
        "/v1/logs",
        data=logs_request(events, version="2.1.39").SerializeToString(),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200
    ingest_paths(paths=[main_file], source_name="files")

    telemetry = Session.objects.get(source=source)
    main = Session.objects.get(source__name="files", external_id=telemetry.external_id)
    assert list(telemetry.events.values_list("type", flat=True)) == ["compaction/start", "compaction/end"]
    session_analyse(session_id=telemetry.pk)
    session_analyse(session_id=main.pk)
    verdict = ("key", "analysis__label", "analysis__predicted_read", "analysis__material")
    told = sorted(Request.objects.filter(session=telemetry, lineage="main").values_list(*verdict))
    read = sorted(main.requests.filter(lineage="main").values_list(*verdict))
    assert told == read
    assert any(label == "compacted" for _key, label, _read, _material in read)
