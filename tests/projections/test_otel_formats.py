from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from projections.formats.otel.claude_code import claude_code_sessions
from projections.formats.otel.genai import genai_sessions
from projections.formats.otel.otlp import (
    BadValue,
    LogItem,
    SpanItem,
    any_value,
    log_records,
    record_count,
    unix_nano,
)
from projections.normalized import LineError, LineNotice

T = datetime(2026, 1, 1, tzinfo=UTC)
STANDARD = {
    "session.id": "s-1",
    "user.id": "anon",
    "user.email": "ana@example.com",
    "organization.id": "org-42",
    "terminal.type": "tmux",
}


def event(position: int, name: str, **attributes: Any) -> LogItem:
    attrs = {**STANDARD, "event.name": name, "event.timestamp": "2026-01-01T00:00:10Z", **attributes}
    return LogItem(
        position=position,
        resource={"service.name": "claude-code", "service.version": "2.1.30"},
        attributes={key: value for key, value in attrs.items() if value is not None},
        body=f"claude_code.{name}",
        time=None,
        trace_id="",
        span_id="",
    )


def span(position: int, **attributes: Any) -> SpanItem:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", **attributes}
    return SpanItem(
        position=position,
        resource={"service.name": "agent", "service.version": "1.0"},
        attributes={key: value for key, value in attrs.items() if value is not None},
        name="chat",
        trace_id="ab" * 16,
        span_id=f"{position:016x}",
        start=T,
        end=T,
        status_code=0,
    )


def read_claude_code(*items: LogItem) -> tuple[list[Any], list[LineError]]:
    errors: list[LineError] = []
    return claude_code_sessions(items, "/v1/logs", errors), errors


def read_genai(*items: SpanItem) -> tuple[list[Any], list[LineError], list[LineNotice]]:
    errors: list[LineError] = []
    notices: list[LineNotice] = []
    return genai_sessions(items, "/v1/traces", errors, notices), errors, notices


def test_an_api_request_keeps_anthropic_buckets_one_to_one() -> None:
    sessions, errors = read_claude_code(
        event(
            1,
            "api_request",
            model="claude-opus-4-5",
            input_tokens="5",
            output_tokens=300,
            cache_read_tokens="40000",
            cache_creation_tokens="1200",
            cost_usd="0.05",
            duration_ms="4000",
            request_id="req_1",
        )
    )

    assert errors == []
    (call,) = sessions[0].records
    usage = call.usage
    assert (usage.uncached_input, usage.cache_read, usage.cache_write_5m, usage.output) == (
        5,
        40_000,
        1_200,
        300,
    )
    assert usage.raw["cost_usd"] == "0.05"
    assert call.key == "req_1"
    assert call.started_at == datetime(2026, 1, 1, 0, 0, 6, tzinfo=UTC)
    assert call.client_version == "claude-code 2.1.30"


@pytest.mark.parametrize(
    ("attributes", "lineage"),
    [
        ({"query_source": "repl_main_thread"}, "main"),
        ({}, "main"),
        ({"query_source": "compact"}, "compaction"),
        ({"query_source": "general-purpose", "agent.name": "general-purpose"}, "subagent"),
    ],
)
def test_the_query_source_decides_the_lineage(attributes: dict[str, str], lineage: str) -> None:
    sessions, _ = read_claude_code(event(1, "api_request", input_tokens="1", **attributes))
    assert sessions[0].records[0].lineage == lineage


def test_a_call_without_a_request_id_is_keyed_by_its_time_and_sequence() -> None:
    sessions, _ = read_claude_code(event(1, "api_request", input_tokens="1", **{"event.sequence": 7}))
    assert sessions[0].records[0].key == "otel:api_request:2026-01-01T00:00:10+00:00#7"


def test_user_and_organization_attributes_become_labels_and_a_logged_prompt_the_title() -> None:
    sessions, _ = read_claude_code(
        event(1, "user_prompt", prompt="<REDACTED>"),
        event(2, "user_prompt", prompt="  rename   the module  "),
        event(3, "tool_result", tool_name="Edit", success="true"),
    )

    (session,) = sessions
    assert session.imported.labels == {
        "user.id": "anon",
        "user.email": "ana@example.com",
        "organization.id": "org-42",
    }
    assert session.imported.title == "rename the module"
    assert session.records == []
    assert session.positions == [1, 2, 3]


def test_events_are_grouped_by_session_and_other_logs_are_skipped() -> None:
    other = LogItem(2, {}, {"message": "GET /health"}, "GET /health", T, "", "")
    sessions, errors = read_claude_code(
        event(1, "api_request", input_tokens="1"),
        other,
        event(3, "api_request", input_tokens="1", **{"session.id": "s-2"}),
        event(4, "tool_decision"),
    )
    assert sorted(s.imported.external_id for s in sessions) == ["s-1", "s-2"]
    assert errors == []


@pytest.mark.parametrize(
    ("attributes", "field"),
    [
        ({"session.id": None}, "session.id"),
        ({"event.timestamp": "yesterday"}, "event.timestamp"),
        ({"input_tokens": "1.5"}, "input_tokens"),
        ({"output_tokens": True}, "output_tokens"),
    ],
)
def test_an_unreadable_event_is_named_by_position_and_field(attributes: dict[str, Any], field: str) -> None:
    sessions, errors = read_claude_code(
        event(1, "api_request", input_tokens="1"), event(2, "api_request", **attributes)
    )
    assert [(e.line, e.field) for e in errors] == [(2, field)]
    assert sum(len(s.records) for s in sessions) == 1


def test_an_api_error_is_a_call_without_usage_and_with_its_status() -> None:
    sessions, errors = read_claude_code(
        event(1, "api_error", status_code=529, error="Overloaded", request_id="req_e")
    )
    assert errors == []
    (call,) = sessions[0].records
    assert (call.status, call.usage, call.key) == (529, None, "req_e:error")


def test_genai_input_tokens_include_the_cache_so_the_uncached_bucket_is_the_rest() -> None:
    sessions, errors, notices = read_genai(
        span(
            1,
            **{
                "gen_ai.request.model": "gpt-5.1",
                "gen_ai.provider.name": "openai",
                "gen_ai.usage.input_tokens": 10_000,
                "gen_ai.usage.cache_read.input_tokens": 8_000,
                "gen_ai.usage.output_tokens": 20,
                "gen_ai.conversation.id": "c-1",
            },
        )
    )
    (call,) = sessions[0].records
    assert (call.usage.uncached_input, call.usage.cache_read, call.usage.cache_write_5m) == (
        2_000,
        8_000,
        None,
    )
    assert (call.provider, call.usage.convention, call.key) == ("openai", "openai", "0000000000000001")
    assert sessions[0].imported.external_id == "c-1"
    assert errors == []
    assert notices == []


def test_an_exclusive_input_count_from_an_older_instrumentation_is_read_as_such_with_a_notice() -> None:
    sessions, _, notices = read_genai(
        span(
            1,
            **{
                "gen_ai.system": "anthropic",
                "gen_ai.provider.name": None,
                "gen_ai.usage.prompt_tokens": 5,
                "gen_ai.usage.cache_read_input_tokens": 40_000,
                "gen_ai.usage.cache_creation_input_tokens": 300,
            },
        )
    )
    usage = sessions[0].records[0].usage
    assert (usage.uncached_input, usage.cache_read, usage.cache_write_5m) == (5, 40_000, 300)
    assert [(n.line, n.field) for n in notices] == [(1, "gen_ai.usage.input_tokens")]


def test_spans_group_by_conversation_then_session_then_trace_and_skip_agent_and_tool_spans() -> None:
    sessions, _, _ = read_genai(
        span(1, **{"gen_ai.conversation.id": "conv", "gen_ai.usage.input_tokens": 1}),
        span(2, **{"session.id": "sess", "gen_ai.usage.input_tokens": 1}),
        span(3, **{"gen_ai.usage.input_tokens": 1}),
        span(4, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 99}),
        span(5, **{"gen_ai.operation.name": "execute_tool"}),
        SpanItem(6, {}, {"http.request.method": "GET"}, "GET", "cd" * 16, "1" * 16, T, T, 0),
    )
    assert sorted(s.imported.external_id for s in sessions) == ["conv", "sess", "trace-" + "ab" * 16]


def test_claude_on_another_platform_keeps_anthropic_cache_rules() -> None:
    sessions, _, _ = read_genai(
        span(
            1,
            **{"gen_ai.provider.name": "aws.bedrock", "gen_ai.request.model": "anthropic.claude-sonnet-4-5"},
        )
    )
    call = sessions[0].records[0]
    assert (call.provider, call.platform) == ("anthropic", "aws.bedrock")


def test_any_value_reads_every_kind_and_64_bit_integers_as_strings() -> None:
    assert any_value({"intValue": "9007199254740993"}) == 9_007_199_254_740_993
    assert any_value({"arrayValue": {"values": [{"boolValue": True}, {"doubleValue": 1.5}]}}) == [True, 1.5]
    assert any_value({"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "b"}}]}}) == {"a": "b"}


def test_times_are_nanoseconds_and_zero_means_unknown() -> None:
    assert unix_nano("1767225600000000000", "t") == T
    assert unix_nano(0, "t") is None
    with pytest.raises(BadValue):
        unix_nano("soon", "t")


def test_a_record_with_a_bad_time_is_reported_and_the_others_kept() -> None:
    request = {
        "resourceLogs": [
            {"scopeLogs": [{"logRecords": [{"timeUnixNano": "x"}, {"timeUnixNano": "1767225600000000000"}]}]}
        ]
    }
    errors: list[LineError] = []
    kept = list(log_records(request, errors, "/v1/logs"))
    assert [item.position for item in kept] == [2]
    assert [(e.line, e.field) for e in errors] == [(1, "timeUnixNano")]
    assert record_count(request, "logs") == 2


def test_an_event_named_only_by_the_records_own_event_name_is_read() -> None:
    request = {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "session.id", "value": {"stringValue": "s-9"}}]},
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "1767225600000000000",
                                "eventName": "claude_code.api_request",
                                "attributes": [{"key": "input_tokens", "value": {"intValue": "10"}}],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    errors: list[LineError] = []
    sessions = claude_code_sessions(log_records(request, errors, "/v1/logs"), "/v1/logs", errors)
    assert errors == []
    assert [(s.imported.external_id, s.records[0].usage.uncached_input) for s in sessions] == [("s-9", 10)]
