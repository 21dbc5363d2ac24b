"""Compaction recognised in raw traffic and in transcripts: the summarising call's lineage and what
it cost, the restart's label and remedy."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from projections.cache.cross_session import PrefixIndex, session_writes
from projections.cache.explain.verdict import verdict
from projections.cache.predict.compaction import COMPACTED, COMPACTION_REWRITE
from projections.cache.results import RequestResult
from projections.cache.session_analysis import analyse_records
from projections.cache.transcript_analysis import is_boundary
from projections.formats import read_sessions
from projections.normalized import EventRecord, RequestRecord
from tests.projections.cache.builders import T0
from tests.projections.cache.claude_code_traffic import (
    SUMMARY_REQUEST,
    capture,
    claude_code_body,
    compaction_captures,
    split,
    turns,
    write_captures,
)
from tests.projections.cache.test_attribution import analysed

EDITED_REMEDY = "append corrections as new messages"
SESSION = "22222222-aaaa-4bbb-8ccc-000000000002"
OPUS = "claude-opus-4-6"


def test_the_summarising_call_is_its_own_lineage_and_says_it_could_not_read_the_main_thread(
    tmp_path: Path,
) -> None:
    path = write_captures(tmp_path / "trace.jsonl", compaction_captures())
    (results,) = analysed(path).values()
    call = results[3]
    said = verdict(call.data, has_body=True)

    assert [r.data["lineage"] for r in results] == ["main", "main", "main", "compaction", "main"]
    assert said.first_change is not None
    assert said.first_change.cause == "compaction"
    assert "1 tool(s)" in said.first_change.detail
    assert said.label == COMPACTION_REWRITE
    assert said.material
    note = call.data["compaction"]
    main_cached = sum(results[2].data["figures"][k] for k in ("reported_read", "reported_write"))
    assert (note["role"], note["shares_head"], note["cached_before"]) == ("call", False, main_cached)
    # It read nothing: all it sent of what the main thread had cached was written or sent uncached.
    assert note["read"] == 0
    assert (note["reprocessed"], note["rewritten"]) == (note["written"] + note["uncached"], note["written"])
    assert "its system prompt and tools differ from the main thread's" in said.detail
    assert "main thread's system prompt and tools" in said.remedy


def test_the_restart_is_compacted_with_no_advice_to_stop_editing_history(tmp_path: Path) -> None:
    path = write_captures(tmp_path / "trace.jsonl", compaction_captures())
    (results,) = analysed(path).values()
    restart = results[4]
    said = verdict(restart.data, has_body=True)

    assert said.label == COMPACTED
    assert said.badge == COMPACTED
    assert said.first_change is not None
    assert said.first_change.cause == "compacted"
    assert EDITED_REMEDY not in said.remedy
    assert said.remedy.startswith("Nothing to fix here")
    assert restart.data["compaction"]["role"] == "restart"
    assert (
        f"read {restart.data['figures']['reported_read']:,} tokens (the tools and system prompt)"
        in said.detail
    )


def test_a_summarising_call_that_keeps_the_main_threads_prefix_reads_it_and_is_no_miss(
    tmp_path: Path,
) -> None:
    history = turns("main", 7)
    main = claude_code_body(history, attribution=None)
    held = sum(split(main, read=0).values()) - 3
    ask = {"role": "user", "content": [{"type": "text", "text": SUMMARY_REQUEST}]}
    fork = claude_code_body([*history, ask], attribution=None)
    path = write_captures(
        tmp_path / "trace.jsonl",
        [
            capture(main, split(main, read=0), key="m0", seconds=0),
            capture(fork, split(fork, read=held), key="c0", seconds=30),
        ],
    )
    (results,) = analysed(path).values()
    said = verdict(results[1].data, has_body=True)

    assert results[1].data["lineage"] == "compaction"
    assert results[1].data["compaction"]["shares_head"] is True
    assert results[1].data["compaction"]["reprocessed"] == 0
    assert said.label is None
    assert "so it reads the main thread's cached history" in said.detail


# --- transcripts -----------------------------------------------------------------------------------


def line(kind: str, seconds: float, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "sessionId": SESSION,
        "uuid": f"{kind}-{seconds}",
        "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
        "version": "2.1.39",
        **fields,
    }


def call(seconds: float, key: str, read: int, write: int, **fields: Any) -> dict[str, Any]:
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": 9,
    }
    message = {
        "id": f"msg_{key}",
        "role": "assistant",
        "model": OPUS,
        "content": [{"type": "text", "text": key}],
        "usage": usage,
    }
    return line("assistant", seconds, requestId=f"req_{key}", message=message, **fields)


def ask(seconds: float, text: str, **fields: Any) -> dict[str, Any]:
    return line("user", seconds, message={"role": "user", "content": text}, **fields)


def transcript_folder(tmp_path: Path, *, compaction_read: int, compaction_write: int) -> Path:
    """A Claude Code 2.1.x session that compacts: two calls, the compaction subagent's call, the
    boundary with its summary, and the call after it."""
    project = tmp_path / "project"
    (project / SESSION / "subagents").mkdir(parents=True)
    main = [
        ask(0, "fix the tests"),
        call(2, "m0", 0, 120_000),
        ask(10, "and the docs"),
        call(12, "m1", 120_000, 2_000),
        line(
            "system",
            60,
            subtype="compact_boundary",
            compactMetadata={"trigger": "auto", "preTokens": 122_000},
        ),
        ask(60, "This session is being continued from a previous conversation.", isCompactSummary=True),
        call(62, "m2", 20_000, 9_000),
    ]
    side = {"isSidechain": True, "agentId": "acompact-e1f845"}
    sub = [ask(30, SUMMARY_REQUEST, **side), call(50, "c0", compaction_read, compaction_write, **side)]
    for path, lines in (
        (project / f"{SESSION}.jsonl", main),
        (project / SESSION / "subagents" / "agent-acompact-e1f845.jsonl", sub),
    ):
        path.write_text("".join(json.dumps(value) + "\n" for value in lines))
    return project


def transcripts_analysed(folder: Path) -> dict[str, list[RequestResult]]:
    sessions: dict[str, tuple[list[RequestRecord], list[EventRecord]]] = {}
    for session in read_sessions(folder):
        items = list(session.items)
        records = [i for i in items if isinstance(i, RequestRecord)]
        events = [i for i in items if isinstance(i, EventRecord) and is_boundary(i)]
        sessions[session.external_id] = (records, events)
    alone = {name: analyse_records(records, events) for name, (records, events) in sessions.items()}
    written = PrefixIndex.of(
        w
        for name, (records, _) in sessions.items()
        for w in session_writes(name, records, alone[name].results)
    )
    return {
        name: analyse_records(records, events, foreign=written.for_reader(name)).results
        for name, (records, events) in sessions.items()
    }


def test_a_compaction_subagent_that_wrote_the_parents_context_says_what_reading_it_would_have_saved(
    tmp_path: Path,
) -> None:
    results = transcripts_analysed(transcript_folder(tmp_path, compaction_read=0, compaction_write=122_300))
    (result,) = results["agent-acompact-e1f845"]
    said = verdict(result.data, has_body=False)

    assert result.data["lineage"] == "compaction"
    assert said.label == COMPACTION_REWRITE
    note = result.data["compaction"]
    assert note["cached_before"] == 122_000  # what the parent's last call left cached
    assert (note["reprocessed"], note["rewritten"]) == (122_000, 122_000)
    assert "re-sent the main thread's ~122,000-token context and read only 0 tokens" in said.detail
    assert f"request #2 of session {SESSION}" in said.detail
    assert "wrote 122,300 tokens instead" in said.detail
    assert "main thread's system prompt and tools" in said.remedy


def test_a_compaction_subagent_that_read_the_parents_cache_says_so(tmp_path: Path) -> None:
    results = transcripts_analysed(transcript_folder(tmp_path, compaction_read=122_000, compaction_write=900))
    (result,) = results["agent-acompact-e1f845"]
    said = verdict(result.data, has_body=False)

    assert said.label is None
    assert result.data["compaction"]["reprocessed"] == 0
    assert "read 122,000 tokens from the cache" in said.detail


def test_the_call_after_a_compact_boundary_is_compacted_material_or_not(tmp_path: Path) -> None:
    results = transcripts_analysed(transcript_folder(tmp_path, compaction_read=0, compaction_write=122_300))
    after = results[SESSION][2]
    said = verdict(after.data, has_body=False)

    assert said.label == COMPACTED
    assert EDITED_REMEDY not in said.remedy
    assert after.data["compaction"] == {
        "role": "restart",
        "read": 20_000,
        "written": 9_000,
        "uncached": 3,
        "cached_before": 122_000,
        "shares_head": None,
        "writer": "",
        "reprocessed": 0,
        "rewritten": 0,
        "reported": True,
    }


SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


@pytest.mark.shared_data
def test_the_harness_compaction_is_a_compaction_call_then_a_compacted_restart() -> None:
    path = SHARED / "dsh-real" / "examples_headless-agent_tests_snapshots_compaction-recovery_session.jsonl"
    if not path.exists():
        pytest.skip("shared data folder is absent")
    (results,) = transcripts_analysed(path).values()

    assert [r.data["lineage"] for r in results] == ["main", "compaction", "main"]
    assert [r.data["compaction"]["role"] for r in results[1:]] == ["call", "restart"]
    assert results[2].label == COMPACTED
    # The scripted replay reports no cache figures: nothing is claimed about what was read.
    assert "reported no cache read" in str(results[1].data["label_detail"])
