"""OTLP export requests shaped like the real ones: Claude Code's events and GenAI spans, built with the
``opentelemetry-proto`` classes, and their OTLP/JSON twins written as the specification's examples are
(lowerCamelCase keys, hex ids, 64-bit integers as strings)."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

SESSION = "4f1e2d3c-0000-4000-8000-00000000c0de"
T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in nanoseconds


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _attributes(values: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=_value(value)) for key, value in values.items()]


def claude_code_event(name: str, second: int, sequence: int, **attributes: Any) -> dict[str, Any]:
    """One Claude Code event's attributes as its exporter sets them (counts as strings, as it sends)."""
    stamp = f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"
    return {
        "name": name,
        "time": T0 + second * 1_000_000_000,
        "attributes": {
            "user.id": "7d1c0ffee",
            "session.id": attributes.pop("session", SESSION),
            "organization.id": "org-42",
            "user.account_uuid": "acc-9",
            "user.email": "ana@example.com",
            "terminal.type": "tmux",
            "event.name": name,
            "event.timestamp": stamp,
            "event.sequence": sequence,
            **attributes,
        },
    }


def api_request(second: int, sequence: int, request_id: str, **usage: Any) -> dict[str, Any]:
    fields = {
        "model": "claude-sonnet-4-5-20250929",
        "input_tokens": "12",
        "output_tokens": "80",
        "cache_read_tokens": "0",
        "cache_creation_tokens": "0",
        "cost_usd": "0.0123",
        "duration_ms": "2000",
        "request_id": request_id,
        "query_source": "repl_main_thread",
    }
    fields.update({key: str(value) for key, value in usage.items()})
    return claude_code_event("api_request", second, sequence, **fields)


def conversation() -> list[dict[str, Any]]:
    """A prompt, three calls that read back what the one before wrote, a tool result and a failed call."""
    return [
        claude_code_event("user_prompt", 0, 0, prompt_length="11", prompt="fix the bug"),
        api_request(3, 1, "req_011A", cache_creation_tokens=20_000),
        claude_code_event("tool_result", 4, 2, tool_name="Read", success="true", duration_ms="12"),
        api_request(8, 3, "req_011B", cache_read_tokens=20_000, cache_creation_tokens=1_500),
        api_request(14, 4, "req_011C", cache_read_tokens=21_500, cache_creation_tokens=900),
        claude_code_event(
            "api_error",
            20,
            5,
            model="claude-sonnet-4-5-20250929",
            error="overloaded",
            status_code=529,
            duration_ms="300",
            attempt="1",
        ),
    ]


def logs_request(events: list[dict[str, Any]], version: str = "2.1.30") -> ExportLogsServiceRequest:
    resource = Resource(attributes=_attributes({"service.name": "claude-code", "service.version": version}))
    records = [
        LogRecord(
            time_unix_nano=event["time"],
            observed_time_unix_nano=event["time"],
            body=AnyValue(string_value=f"claude_code.{event['name']}"),
            attributes=_attributes(event["attributes"]),
        )
        for event in events
    ]
    scope = ScopeLogs(scope=InstrumentationScope(name="com.anthropic.claude_code.events", version=version))
    scope.log_records.extend(records)
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope])])


def logs_json(events: list[dict[str, Any]], version: str = "2.1.30") -> dict[str, Any]:
    """The OTLP/JSON form of :func:`logs_request`, keyed as the specification's logs example is."""

    def value(item: Any) -> dict[str, Any]:
        if isinstance(item, int) and not isinstance(item, bool):
            return {"intValue": str(item)}
        return {"stringValue": str(item)}

    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": "claude-code"}},
                        {"key": "service.version", "value": {"stringValue": version}},
                    ]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": "com.anthropic.claude_code.events", "version": version},
                        "logRecords": [
                            {
                                "timeUnixNano": str(event["time"]),
                                "observedTimeUnixNano": str(event["time"]),
                                "severityNumber": 9,
                                "body": {"stringValue": f"claude_code.{event['name']}"},
                                "attributes": [
                                    {"key": key, "value": value(item)}
                                    for key, item in event["attributes"].items()
                                ],
                                "traceId": "",
                                "spanId": "",
                            }
                            for event in events
                        ],
                    }
                ],
            }
        ]
    }


def genai_span(index: int, *, conversation: str | None = "conv-7", **attributes: Any) -> dict[str, Any]:
    """One chat span of an agent instrumented with the GenAI conventions (input includes the cache)."""
    values: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.usage.input_tokens": 10_000 + 1_000 * index,
        "gen_ai.usage.output_tokens": 50,
        **attributes,
    }
    if conversation is not None:
        values["gen_ai.conversation.id"] = conversation
    return {
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": f"eee19b7ec3c1b1{index:02x}",
        "start": T0 + index * 10_000_000_000,
        "end": T0 + index * 10_000_000_000 + 1_500_000_000,
        "attributes": values,
    }


def traces_request(spans: list[dict[str, Any]]) -> ExportTraceServiceRequest:
    resource = Resource(attributes=_attributes({"service.name": "my-agent", "service.version": "0.4.1"}))
    built = [
        Span(
            trace_id=bytes.fromhex(span["trace_id"]),
            span_id=bytes.fromhex(span["span_id"]),
            name=f"chat {span['attributes'].get('gen_ai.request.model', '')}",
            kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=span["start"],
            end_time_unix_nano=span["end"],
            attributes=_attributes(span["attributes"]),
        )
        for span in spans
    ]
    scope = ScopeSpans(scope=InstrumentationScope(name="my-agent.genai"), spans=built)
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope])])


def traces_json(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The OTLP/JSON form of :func:`traces_request`, as the specification's trace example writes it."""

    def value(item: Any) -> dict[str, Any]:
        if isinstance(item, int) and not isinstance(item, bool):
            return {"intValue": item}  # a JSON number is accepted for 64-bit integers too
        return {"stringValue": str(item)}

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "my-agent"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "my-agent.genai"},
                        "spans": [
                            {
                                "traceId": span["trace_id"].upper(),
                                "spanId": span["span_id"],
                                "parentSpanId": "",
                                "name": "chat",
                                "kind": 3,
                                "startTimeUnixNano": str(span["start"]),
                                "endTimeUnixNano": str(span["end"]),
                                "attributes": [
                                    {"key": key, "value": value(item)}
                                    for key, item in span["attributes"].items()
                                ],
                                "status": {},
                            }
                            for span in spans
                        ],
                    }
                ],
            }
        ]
    }
