from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from projections.formats.anthropic.claude_trace import read_claude_trace
from tests.projections.formats.conftest import FIXTURES, drain

TRACE = FIXTURES / "log-2025-05-29-23-38-24.jsonl"


def test_each_messages_pair_is_a_request_with_its_body_and_a_cache_request_event() -> None:
    (session,) = list(read_claude_trace(TRACE))
    events, requests, errors = drain(session)
    assert session.external_id == "log-2025-05-29-23-38-24"
    assert errors == []
    assert [r.key for r in requests] == ["req_1", "msg_2", "req_err"]
    assert [e.seq for e in events] == [0, 1, 2]
    assert [e.data["requestRef"] for e in events] == ["req_1", "msg_2", "req_err"]
    assert all(e.type == "cache/request" for e in events)
    assert requests[1].body is not None
    assert requests[1].body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert requests[0].started_at == datetime.fromtimestamp(1748554704.25, tz=UTC)


def test_json_body_usage_is_read() -> None:
    (session,) = list(read_claude_trace(TRACE))
    _, requests, _ = drain(session)
    usage = requests[0].usage
    assert usage is not None
    assert (usage.uncached_input, usage.output, usage.convention) == (8, 1, "anthropic")


def test_sse_body_raw_usage_comes_from_message_start_and_message_delta() -> None:
    (session,) = list(read_claude_trace(TRACE))
    events, requests, _ = drain(session)
    usage = requests[1].usage
    assert usage is not None
    assert (usage.uncached_input, usage.cache_write_5m, usage.cache_read, usage.output) == (4, 300, 15000, 42)
    assert events[1].data["usage"]["outputTokens"] == 42


def test_calls_without_tools_are_side_calls() -> None:
    (session,) = list(read_claude_trace(TRACE))
    _, requests, _ = drain(session)
    assert [r.lineage for r in requests] == ["side", "main", "main"]


def test_an_error_response_has_a_status_and_no_usage() -> None:
    (session,) = list(read_claude_trace(TRACE))
    _, requests, _ = drain(session)
    assert (requests[2].status, requests[2].usage) == (529, None)


def test_the_anthropic_beta_header_is_kept_on_the_request(tmp_path: Path) -> None:
    record = {
        "request": {
            "timestamp": 1748554704.25,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages",
            "headers": {"Anthropic-Beta": "claude-code-20250219, context-1m-2025-08-07"},
            "body": {"model": "claude-sonnet-4-5-20250929", "messages": [{"role": "user", "content": "hi"}]},
        },
        "response": {
            "status_code": 200,
            "headers": {"request-id": "req_b"},
            "body": {"usage": {"input_tokens": 3}},
        },
        "logged_at": "2025-05-29T23:38:25Z",
    }
    path = tmp_path / "log-beta.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (session,) = list(read_claude_trace(path))
    _, requests, _ = drain(session)
    assert requests[0].betas == ("claude-code-20250219", "context-1m-2025-08-07")
