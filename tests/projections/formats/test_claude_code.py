from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from projections.formats import read_sessions
from projections.formats.anthropic.claude_code import read_claude_code
from projections.prices import event_price
from tests.projections.formats.conftest import FIXTURES, drain

PROJECT = FIXTURES / "claude-code" / "proj"
SESSION = "11111111-aaaa-4bbb-8ccc-000000000001"
TRANSCRIPT = PROJECT / f"{SESSION}.jsonl"


def _main() -> Any:
    sessions = read_claude_code(TRANSCRIPT)
    main = next(sessions)
    return main, drain(main), sessions


def test_one_call_per_message_and_request_id_keeping_the_largest_output() -> None:
    _, (_, requests, _), _ = _main()
    assert [r.key for r in requests] == ["req_A", "req_B", "req_C", "req_D"]
    first = requests[0]
    assert first.usage is not None
    assert (first.usage.uncached_input, first.usage.cache_read, first.usage.output) == (3, 0, 95)
    assert (first.usage.cache_write_5m, first.usage.cache_write_1h) == (4000, 1000)
    assert first.usage.convention == "anthropic"
    assert first.started_at == datetime(2026, 2, 1, 10, 0, 2, tzinfo=UTC)
    assert (first.lineage, first.provider, first.api, first.model, first.body) == (
        "main",
        "anthropic",
        "messages",
        "claude-opus-4-6",
        None,
    )
    assert [r.ordinal for r in requests] == [0, 1, 2, 3]


def test_a_call_is_one_assistant_message_with_merged_content_before_its_tool_results() -> None:
    _, (events, _, _), _ = _main()
    assert [e.type for e in events[:5]] == [
        "user/message",
        "assistant/message",
        "tool/result",
        "tool/result",
        "assistant/message",
    ]
    call = events[1].data
    assert [b["type"] for b in call["message"]["content"]] == ["reasoning", "tool-call", "tool-call"]
    assert call["message"]["content"][1] == {
        "type": "tool-call",
        "toolCallId": "toolu_1",
        "toolName": "Bash",
        "arguments": '{"command":"ls"}',
    }
    assert call["usage"] == {
        "inputTokens": 3,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 5000,
        "cacheWrite1hTokens": 1000,
        "outputTokens": 95,
    }
    assert (call["turn"], call["step"], call["requestId"], call["messageId"]) == (1, 1, "req_A", "msg_A")
    result = events[3].data["message"]["content"][0]
    assert result == {
        "type": "tool-result",
        "toolCallId": "toolu_2",
        "toolName": "Read",
        "content": [{"type": "text", "text": "hello"}],
    }
    assert all(e.surface_op == "append" for e in events[:5])
    assert [e.seq for e in events] == list(range(len(events)))


def test_synthetic_lines_are_not_calls() -> None:
    _, (events, requests, _), _ = _main()
    assert "req_syn" not in {r.key for r in requests}
    texts = json.dumps([e.data for e in events])
    assert "No response requested." not in texts


def test_a_corrupted_line_is_reported_and_the_rest_goes_on() -> None:
    _, (_, requests, errors), _ = _main()
    assert [(e.line, e.field) for e in errors] == [(11, "json")]
    assert len(requests) == 4


def test_compact_boundary_becomes_a_metered_checkpoint_replacing_the_surface() -> None:
    _, (events, _, _), _ = _main()
    kinds = [e.type for e in events]
    start = kinds.index("compaction/start")
    assert kinds[start : start + 4] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    summary, checkpoint = events[start + 1], events[start + 2]
    shadowed = list(range(start))
    assert summary.data["preTokens"] == 5400
    assert summary.data["shadowedTokenCount"] == sum(event_price(e) for e in events[:start])
    assert summary.data["shadowedSeqs"] == shadowed
    assert summary.data["shadowedRange"] == {"start": 0, "end": len(shadowed) - 1}
    assert summary.data["summary"].startswith("This session is being continued")
    assert checkpoint.surface_op == {"op": "replace", "start": 0, "end": len(shadowed) - 1}
    assert checkpoint.source_event_seqs == tuple(shadowed)
    assert checkpoint.data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert kinds[start + 4 :] == ["user/message", "assistant/message"]


def test_inline_sidechain_is_its_own_subagent_session_linked_to_the_parent() -> None:
    main, _, rest = _main()
    side = next(rest)
    events, requests, errors = drain(side)
    assert side.external_id == "sidechain-s1"
    assert (side.parent_external_id, side.lineage) == (SESSION, "subagent")
    assert [e.type for e in events] == ["user/message", "assistant/message"]
    assert [(r.key, r.lineage, r.model) for r in requests] == [("req_S", "subagent", "claude-haiku-4-5")]
    assert errors == []
    assert side.started_at == datetime(2026, 2, 1, 10, 1, 2, tzinfo=UTC)
    assert next(rest, None) is None
    assert main.external_id == SESSION


def test_main_session_leaves_sidechain_lines_out() -> None:
    _, (_, requests, _), _ = _main()
    assert "req_S" not in {r.key for r in requests}


def test_a_project_folder_reads_sessions_then_their_subagents_and_skips_non_logs() -> None:
    sessions = []
    for session in read_sessions(PROJECT):
        _, requests, _ = drain(session)
        sessions.append((session.external_id, session.parent_external_id, session.lineage, len(requests)))
    assert sessions == [
        (SESSION, None, "main", 4),
        ("sidechain-s1", SESSION, "subagent", 1),
        ("agent-a77", SESSION, "subagent", 1),
    ]


def test_other_record_kinds_are_tolerated(write: Any) -> None:
    rows = [
        {"type": "summary", "summary": "A title", "leafUuid": "x"},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
        {"type": "custom-title", "title": "t", "sessionId": "s"},
        {
            "type": "user",
            "sessionId": "s",
            "uuid": "u",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hi"},
        },
    ]
    path = write("s.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    (session,) = list(read_claude_code(path))
    events, requests, errors = drain(session)
    assert [e.type for e in events] == ["user/message"]
    assert (requests, errors) == ([], [])


def test_negative_usage_is_a_line_error_naming_the_field(write: Any) -> None:
    line = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": "a",
        "requestId": "r",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {
            "id": "m",
            "model": "claude",
            "content": [],
            "usage": {"input_tokens": -1, "output_tokens": 2},
        },
    }
    (session,) = list(read_claude_code(write("s.jsonl", (json.dumps(line) + "\n").encode())))
    _, requests, errors = drain(session)
    assert [(e.line, e.field) for e in errors] == [(1, "message.usage.input_tokens")]
    assert [r.usage for r in requests] == [None]
