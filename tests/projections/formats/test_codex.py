from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from projections.cache.predict.transcript import TranscriptCall, predict_transcript
from projections.formats import detect_format, read_sessions
from projections.formats.openai.codex import read_codex
from projections.normalized import EventRecord, LineError, RequestRecord
from projections.prices import event_price
from tests.projections.formats.conftest import FIXTURES, drain, jsonl

SESSIONS = FIXTURES / "codex" / "sessions"
OLDER = SESSIONS / "2025/10/14/rollout-2025-10-14T10-00-00-0199e2a1-0000-7000-8000-00000000000a.jsonl"
NEWER = SESSIONS / "2026/09/03/rollout-2026-09-03T14-30-00-019b0c3d-0000-7000-8000-00000000000b.jsonl"
COMPACTED = SESSIONS / "2025/11/20/rollout-2025-11-20T16-00-00-019aa111-0000-7000-8000-00000000000c.jsonl"
BARE = SESSIONS / "2025/08/20/rollout-2025-08-20T09-00-00-01989abc-0000-7000-8000-00000000000d.jsonl"


def _read(path: Path) -> tuple[Any, list[EventRecord], list[RequestRecord], list[LineError]]:
    (session,) = list(read_codex(path))
    events, requests, errors = drain(session)
    return session, events, requests, errors


def _final_total(path: Path) -> dict[str, int]:
    """The cumulative usage of the rollout's last token count, as the CLI summed it."""
    total: dict[str, int] = {}
    for line in path.read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            total = payload["info"]["total_token_usage"]
    return total


def _buckets(requests: list[RequestRecord]) -> list[tuple[int | None, ...]]:
    return [
        (r.usage.uncached_input, r.usage.cache_read, r.usage.cache_write_5m, r.usage.output)
        for r in requests
        if r.usage is not None
    ]


@pytest.mark.parametrize("path", [OLDER, NEWER, COMPACTED])
def test_the_calls_add_up_to_the_cli_s_own_running_total(path: Path) -> None:
    _, _, requests, errors = _read(path)
    total = _final_total(path)
    usages = [r.usage for r in requests if r.usage is not None]
    assert errors == []
    prompt = sum((u.uncached_input or 0) + (u.cache_read or 0) + (u.cache_write or 0) for u in usages)
    assert prompt == total["input_tokens"]
    assert sum(u.cache_read or 0 for u in usages) == total["cached_input_tokens"]
    assert sum(u.cache_write or 0 for u in usages) == total.get("cache_write_input_tokens", 0)
    assert sum(u.output or 0 for u in usages) == total["output_tokens"]
    assert sum(u.raw["reasoning_output_tokens"] for u in usages) == total["reasoning_output_tokens"]


def test_an_older_release_reports_reads_inside_input_and_no_write_bucket() -> None:
    session, _, requests, _ = _read(OLDER)
    assert (session.external_id, session.format, session.format_version, session.cwd) == (
        "0199e2a1-0000-7000-8000-00000000000a",
        "codex",
        "0.46.0",
        "/home/dev/shop",
    )
    assert session.started_at == datetime(2025, 10, 14, 10, 0, tzinfo=UTC)
    assert session.ended_at == datetime(2025, 10, 14, 10, 0, 16, 100000, tzinfo=UTC)
    # The second call reported input 4300 of which 3968 cached: 332 were not.
    assert _buckets(requests) == [(4000, 0, None, 120), (332, 3968, None, 90), (276, 4224, None, 80)]
    assert [r.usage.raw["reasoning_output_tokens"] for r in requests if r.usage] == [64, 32, 0]
    assert all(r.usage is not None and r.usage.convention == "openai" for r in requests)
    assert {(r.provider, r.platform, r.api, r.model, r.lineage) for r in requests} == {
        ("openai", "openai", "responses", "gpt-5-codex", "main")
    }


def test_a_repeated_token_count_is_not_a_second_call() -> None:
    infos = [json.loads(line)["payload"].get("info") for line in OLDER.read_text().splitlines()]
    counted = [info for info in infos if info]
    assert len(counted) == 4
    assert counted[1] == counted[2], "a rate-limit refresh repeats the second count"
    _, _, requests, _ = _read(OLDER)
    assert len(requests) == 3
    assert [r.ordinal for r in requests] == [0, 1, 2]


def test_a_newer_release_splits_cache_writes_out_of_the_input() -> None:
    session, events, requests, _ = _read(NEWER)
    assert session.format_version == "0.150.0"
    assert _buckets(requests) == [
        (296, 0, 8704, 300),
        (284, 8704, 512, 60),
        (200, 9216, 384, 40),
        (44, 9600, 256, 20),
    ]
    assert requests[0].usage is not None
    assert requests[0].usage.raw["cache_write_input_tokens"] == 8704
    first_call = next(e for e in events if e.type == "assistant/message")
    assert first_call.data["usage"] == {
        "inputTokens": 296,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 8704,
        "cacheWrite1hTokens": 0,
        "outputTokens": 300,
    }


def test_messages_calls_and_tool_results_keep_the_conversation_order() -> None:
    _, events, requests, _ = _read(NEWER)
    assert [e.type for e in events] == [
        "user/message",
        "user/message",
        "user/message",
        "assistant/message",
        "tool/result",
        "assistant/message",
        "user/message",
        "assistant/message",
        "tool/result",
        "assistant/message",
    ]
    injected = [e.data["source"] for e in events[:3]]
    assert injected == [{"kind": "user", "meta": True}, {"kind": "user", "meta": True}, {"kind": "user"}]
    call = events[3].data
    assert call["message"]["content"] == [
        {"type": "reasoning", "text": "**Planning the endpoint**"},
        {
            "type": "tool-call",
            "toolCallId": "call_b1",
            "toolName": "apply_patch",
            "arguments": "*** Begin Patch\n*** Add File: health.py\n+def health():\n"
            '+    return {"ok": True}\n*** End Patch\n',
        },
    ]
    result = events[4].data["message"]["content"][0]
    assert (result["type"], result["toolCallId"], result["toolName"]) == (
        "tool-result",
        "call_b1",
        "apply_patch",
    )
    assert [(e.data["turn"], e.data["step"]) for e in events if e.type == "assistant/message"] == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    ]
    assert [e.surface_op for e in events] == ["append"] * len(events)
    assert [r.key for r in requests] == ["line-7", "line-12", "line-16", "line-19"]
    assert requests[0].started_at == datetime(2026, 9, 3, 14, 30, 4, tzinfo=UTC)


def test_a_compaction_replaces_the_surface_with_its_summary() -> None:
    _, events, requests, _ = _read(COMPACTED)
    kinds = [e.type for e in events]
    start = kinds.index("compaction/start")
    assert kinds[start : start + 4] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    assert kinds.count("compaction/start") == 1, (
        "context_compacted right after compacted is the same compaction"
    )
    summary = events[start + 1].data
    assert summary["summary"] == "The parser was split into tokenize() and build(); error handling is next."
    assert summary["shadowedSeqs"] == list(range(start))
    # The claim is the heuristic price of what it replaces, which the fold checks.
    assert summary["shadowedTokenCount"] == sum(event_price(e) for e in events[:start] if e.surface_op)
    checkpoint = events[start + 2]
    assert checkpoint.surface_op == {"op": "replace", "start": 0, "end": start - 1}
    assert checkpoint.data["source"] == {"kind": "plugin", "plugin": "compact"}
    # The summary request itself keeps no output in the rollout, only its token count.
    compaction_call = requests[2]
    assert compaction_call.usage is not None
    assert compaction_call.usage.output == 900
    assert compaction_call.started_at is not None
    assert compaction_call.started_at < checkpoint.time
    assert requests[3].started_at is not None
    assert requests[3].started_at > checkpoint.time


def test_a_compaction_event_without_its_summary_still_marks_the_boundary(write: Any) -> None:
    lines = [json.loads(line) for line in COMPACTED.read_text().splitlines()]
    without_summary = [line for line in lines if line.get("type") != "compacted"]
    path = write("rollout-x.jsonl", jsonl(without_summary))
    _, events, _, errors = _read(path)
    assert errors == []
    kinds = [e.type for e in events]
    assert kinds.count("compaction/start") == 1
    assert kinds.count("compaction/end") == 1
    assert "compaction/summary" not in kinds


def test_the_older_bare_layout_reads_messages_and_calls_without_usage() -> None:
    session, events, requests, errors = _read(BARE)
    assert errors == []
    assert (session.external_id, session.format_version) == ("01989abc-0000-7000-8000-00000000000d", "")
    assert session.cwd == "/home/dev/old", "the older layout names its cwd in the environment context only"
    assert session.started_at == datetime(2025, 8, 20, 9, 0, tzinfo=UTC)
    assert [e.type for e in events] == [
        "user/message",
        "user/message",
        "assistant/message",
        "tool/result",
        "assistant/message",
    ]
    failed = events[3].data["message"]["content"][0]
    assert failed["isError"] is True
    assert failed["content"] == [{"type": "text", "text": "ls: permission denied"}]
    # A tool output went back to the model, so the reply after it is a second call.
    assert [(r.key, r.usage) for r in requests] == [("line-6", None), ("line-10", None)]


def test_a_subagent_rollout_names_its_parent_thread(write: Any) -> None:
    meta = {
        "timestamp": "2026-09-03T15:00:00Z",
        "type": "session_meta",
        "payload": {
            "id": "child-1",
            "cwd": "/srv/api",
            "cli_version": "0.150.0",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "depth": 1}}},
        },
    }
    (session,) = list(read_codex(write("rollout-child.jsonl", jsonl([meta]))))
    assert (session.external_id, session.lineage, session.parent_external_id) == (
        "child-1",
        "subagent",
        "parent-1",
    )


def test_a_malformed_line_is_reported_with_its_file_line_and_field(write: Any) -> None:
    lines: list[dict[str, Any] | str] = [json.loads(line) for line in OLDER.read_text().splitlines()]
    bad_count = json.loads(json.dumps(lines[8]))
    bad_count["payload"]["info"]["last_token_usage"]["cached_input_tokens"] = "lots"
    lines[8] = bad_count
    lines.insert(3, '{"timestamp": "2025-10-14T10:00:01Z", "type": "turn_context", ')
    lines.insert(4, {"timestamp": "yesterday", "type": "response_item", "payload": []})
    path = write("rollout-bad.jsonl", jsonl(lines))
    _, _, requests, errors = _read(path)
    assert [(e.path, e.line, e.field) for e in errors] == [
        (str(path), 4, "json"),
        (str(path), 5, "payload"),
        (str(path), 11, "payload.info.last_token_usage.cached_input_tokens"),
    ]
    assert "'lots'" in errors[2].reason
    assert str(errors[2]).startswith(f"{path}:11: payload.info.last_token_usage.cached_input_tokens:")
    # The other calls still count; the bad one is kept as a call without usage.
    assert _buckets(requests) == [(332, 3968, None, 90), (276, 4224, None, 80)]


def test_cached_tokens_beyond_the_input_are_refused(write: Any) -> None:
    count = {
        "timestamp": "2026-01-01T00:00:00Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                "total_token_usage": {
                    "input_tokens": 10,
                    "cached_input_tokens": 8,
                    "cache_write_input_tokens": 5,
                },
                "last_token_usage": {
                    "input_tokens": 10,
                    "cached_input_tokens": 8,
                    "cache_write_input_tokens": 5,
                },
            },
        },
    }
    _, _, requests, errors = _read(write("rollout-over.jsonl", jsonl([count])))
    assert requests == []
    assert [(e.line, e.field) for e in errors] == [(1, "payload.info.last_token_usage.cached_input_tokens")]


def test_a_context_window_overflow_marker_is_not_a_call(write: Any) -> None:
    lines = [json.loads(line) for line in OLDER.read_text().splitlines()]
    marker = {
        "timestamp": "2025-10-14T10:00:20Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                "total_token_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 272000},
                "last_token_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 258910},
                "model_context_window": 272000,
            },
        },
    }
    _, _, requests, errors = _read(write("rollout-full.jsonl", jsonl([*lines, marker])))
    assert errors == []
    assert len(requests) == 3


def test_rollouts_are_detected_by_their_first_record_and_read_from_a_dated_tree() -> None:
    assert {detect_format(path) for path in (OLDER, NEWER, COMPACTED, BARE)} == {"codex"}
    sessions = list(read_sessions(FIXTURES / "codex"))
    assert [s.external_id for s in sessions] == [
        "01989abc-0000-7000-8000-00000000000d",
        "0199e2a1-0000-7000-8000-00000000000a",
        "019aa111-0000-7000-8000-00000000000c",
        "019b0c3d-0000-7000-8000-00000000000b",
    ]
    assert {s.format for s in sessions} == {"codex"}
    forced = list(read_sessions(OLDER, format="codex"))
    assert [s.external_id for s in forced] == ["0199e2a1-0000-7000-8000-00000000000a"]


@pytest.mark.parametrize("path", [OLDER, NEWER])
def test_the_transcript_predictor_reads_codex_calls_exactly(path: Path) -> None:
    _, _, requests, _ = _read(path)
    calls = [TranscriptCall(r.started_at, r.model, r.usage, r.lineage) for r in requests if r.usage]
    predictions = predict_transcript(calls)
    assert [p.rule for p in predictions] == ["first-call"] + ["carried"] * (len(calls) - 1)
    assert all(p.exact(c.usage.cache_read) for c, p in zip(calls[1:], predictions[1:], strict=True))


def test_a_call_still_open_at_the_end_waits_for_its_token_count(write: Any) -> None:
    lines = [json.loads(line) for line in NEWER.read_text().splitlines()]
    cut = write("rollout-live.jsonl", jsonl(lines[:17]))  # the last call's tool call and output, no count
    _, events, requests, _ = _read(cut)
    assert [r.key for r in requests] == ["line-7", "line-12"]
    assert events[-1].type == "user/message"
    aborted = {"timestamp": "2026-09-03T14:31:06Z", "type": "event_msg", "payload": {"type": "turn_aborted"}}
    _, events, requests, _ = _read(write("rollout-aborted.jsonl", jsonl([*lines[:17], aborted])))
    assert [(r.key, r.usage) for r in requests[2:]] == [("line-16", None)]
    assert [e.type for e in events[-2:]] == ["assistant/message", "tool/result"]


def _restamped(lines: list[dict[str, Any]], at: str) -> list[dict[str, Any]]:
    """Lines copied into a fork: the CLI stamps them all with the moment of the fork."""
    return [{**line, "timestamp": at} for line in lines]


def _line(at: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2025-10-15T08:00:{at}Z", "type": kind, "payload": payload}


def _message(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def test_a_fork_keeps_the_copied_history_as_context_but_not_as_its_calls(write: Any) -> None:
    parent_id = "0199e2a1-0000-7000-8000-00000000000a"
    parent = [json.loads(line) for line in OLDER.read_text().splitlines()]
    child_meta = _line("00.000", "session_meta", {"id": "child-fork", "forked_from_id": parent_id})
    parent_total = _final_total(OLDER)
    own_last = {"input_tokens": 5000, "cached_input_tokens": 4480, "output_tokens": 30}
    own_total = {name: parent_total.get(name, 0) + own_last.get(name, 0) for name in parent_total}
    own_turn = [
        _line("09.000", "turn_context", {"model": "gpt-5-codex"}),
        _line("09.010", "response_item", _message("user", "Also fix lint.")),
        _line("12.000", "response_item", _message("assistant", "Done.")),
        _line(
            "12.100",
            "event_msg",
            {"type": "token_count", "info": {"total_token_usage": own_total, "last_token_usage": own_last}},
        ),
    ]
    copied = _restamped(parent, "2025-10-15T08:00:00.020Z")
    fork = write("rollout-fork.jsonl", jsonl([child_meta, *copied, *own_turn]))
    session, events, requests, errors = _read(fork)
    assert errors == []
    assert (session.external_id, session.parent_external_id) == ("child-fork", parent_id)
    assert _buckets(requests) == [(520, 4480, None, 30)]
    assert requests[0].key == f"line-{len(parent) + 4}"
    replies = [e for e in events if e.type == "assistant/message" and "usage" not in e.data]
    assert len(replies) == 3, "the parent's replies are context the fork sends again"
