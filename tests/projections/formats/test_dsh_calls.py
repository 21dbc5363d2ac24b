from __future__ import annotations

from datetime import UTC, datetime

from projections.formats.dsh.calls import DshCalls
from projections.normalized import EventRecord, LineError, RequestRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def event(seq: int, type: str, **data: object) -> EventRecord:
    return EventRecord(seq=seq, type=type, time=T0, data=data, line=seq + 2)


def test_an_assistant_reply_with_usage_is_one_call_to_the_latest_header_model() -> None:
    calls = DshCalls("s.jsonl", "main")
    assert (
        calls.observe(event(0, "request/header", header={"config": {"provider": "anthropic", "model": "m1"}}))
        is None
    )
    call = calls.observe(
        event(
            1,
            "assistant/message",
            usage={"inputTokens": 5, "cacheReadTokens": 900, "cacheWriteTokens": 100, "outputTokens": 7},
        )
    )
    assert isinstance(call, RequestRecord)
    assert (call.key, call.ordinal, call.lineage, call.provider, call.model) == (
        "seq-1",
        0,
        "main",
        "anthropic",
        "m1",
    )
    assert call.usage is not None
    assert (
        call.usage.uncached_input,
        call.usage.cache_read,
        call.usage.cache_write_5m,
        call.usage.output,
    ) == (5, 900, 100, 7)


def test_request_context_changes_the_model_of_later_calls() -> None:
    calls = DshCalls("s.jsonl", "main")
    calls.observe(event(0, "request/context", provider="deepseek", model="deepseek-chat"))
    call = calls.observe(event(1, "assistant/message", usage={"inputTokens": 1}))
    assert isinstance(call, RequestRecord)
    assert (call.provider, call.model) == ("deepseek", "deepseek-chat")


def test_a_compaction_summary_with_usage_is_a_call_of_the_compaction_lineage() -> None:
    calls = DshCalls("s.jsonl", "main")
    call = calls.observe(event(3, "compaction/summary", usage={"inputTokens": 50000, "outputTokens": 800}))
    assert isinstance(call, RequestRecord)
    assert call.lineage == "compaction"


def test_events_without_usage_record_no_call() -> None:
    calls = DshCalls("s.jsonl", "main")
    assert (
        calls.observe(event(0, "assistant/message", message={"role": "assistant", "content": "hi"})) is None
    )
    assert calls.observe(event(1, "user/message", usage={"inputTokens": 1})) is None


def test_negative_usage_is_a_line_error_naming_the_field() -> None:
    calls = DshCalls("s.jsonl", "main")
    error = calls.observe(event(4, "assistant/message", usage={"inputTokens": -3}))
    assert isinstance(error, LineError)
    assert (error.path, error.line, error.field) == ("s.jsonl", 6, "data.usage.inputTokens")
