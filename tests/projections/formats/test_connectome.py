from __future__ import annotations

from datetime import UTC, datetime

from projections.formats.anthropic.connectome import read_connectome
from tests.projections.formats.conftest import FIXTURES, drain

CALLS = FIXTURES / "llm-calls.2026-03-01T12-00-00-000Z.jsonl"


def test_llm_calls_become_requests_with_start_time_before_the_logged_end() -> None:
    (session,) = list(read_connectome(CALLS))
    events, requests, errors = drain(session)
    assert errors == []
    assert [r.key for r in requests[:2]] == ["msg_c1", "msg_c2"]
    assert requests[0].started_at == datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert [e.seq for e in events] == [0, 1, 2]


def test_raw_request_is_the_body_when_full_payloads_were_logged() -> None:
    (session,) = list(read_connectome(CALLS))
    _, requests, _ = drain(session)
    assert requests[0].body == {
        "model": "claude-opus-4-6",
        "max_tokens": 8000,
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert requests[1].body is None


def test_usage_keeps_the_one_hour_write_split() -> None:
    (session,) = list(read_connectome(CALLS))
    _, requests, _ = drain(session)
    usage = requests[0].usage
    assert usage is not None
    assert (usage.cache_write_5m, usage.cache_write_1h, usage.cache_read) == (0, 2000, 30000)


def test_streamed_turns_are_main_and_other_calls_side_and_errors_have_no_usage() -> None:
    (session,) = list(read_connectome(CALLS))
    _, requests, _ = drain(session)
    assert [r.lineage for r in requests] == ["main", "side", "main"]
    assert requests[2].usage is None
    assert requests[2].model == "claude-opus-4-6"
