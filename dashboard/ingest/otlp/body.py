"""OTLP/HTTP bodies in both encodings, read into the OTLP/JSON shape
:mod:`projections.formats.otel.otlp` reads.

An ``application/x-protobuf`` body is parsed with the OpenTelemetry project's own classes
(``opentelemetry-proto``) into its ``Export*ServiceRequest``, then walked into that shape
(:class:`MessageWalk`). An ``application/json`` body is already in it (OpenTelemetry Protocol
specification 1.x, "JSON Protobuf Encoding": lowerCamelCase field names, trace and span ids in hex
rather than the base64 of the generic protobuf JSON mapping, 64-bit integers as strings or numbers,
enums as integers); it is read by the storable-JSON decoder every other body goes through (NUL and
lone surrogates replaced, NaN refused, nesting bounded) and its levels and ids are checked.

Answers are encoded the way the request was: an ``Export*ServiceResponse`` (with
``partial_success`` when records were rejected) on success, a ``google.rpc.Status`` on failure.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from dashboard.ingest.api.body import BodyRejected
from projections.formats.reading.storable import MAX_JSON_DEPTH, REPLACEMENT, TooDeep, decode_storable

Signal = Literal["logs", "traces", "metrics"]
Encoding = Literal["protobuf", "json"]
PROTOBUF_TYPE = "application/x-protobuf"
JSON_TYPE = "application/json"

REQUESTS: dict[str, type[Message]] = {
    "logs": logs_service_pb2.ExportLogsServiceRequest,
    "traces": trace_service_pb2.ExportTraceServiceRequest,
    "metrics": metrics_service_pb2.ExportMetricsServiceRequest,
}
RESPONSES: dict[str, tuple[type[Message], str]] = {
    "logs": (logs_service_pb2.ExportLogsServiceResponse, "rejected_log_records"),
    "traces": (trace_service_pb2.ExportTraceServiceResponse, "rejected_spans"),
    "metrics": (metrics_service_pb2.ExportMetricsServiceResponse, "rejected_data_points"),
}

# google.rpc.Code values the answers use.
INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8
UNIMPLEMENTED = 12
UNAVAILABLE = 14
UNAUTHENTICATED = 16


def otlp_encoding(content_type: str) -> Encoding | None:
    """The encoding a ``Content-Type`` names; ``None`` for one OTLP/HTTP does not define."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == PROTOBUF_TYPE:
        return "protobuf"
    if media == JSON_TYPE:
        return "json"
    return None


def otlp_request_dict(body: bytes, *, signal: Signal, encoding: Encoding) -> tuple[dict[str, Any], str]:
    """The export request of ``body`` as an OTLP/JSON dict, and what was repaired to store it ("" if
    nothing). Raises :class:`BodyRejected` (400) naming what is wrong with a body that is not one."""
    name = REQUESTS[signal].DESCRIPTOR.name
    if encoding == "protobuf":
        message = REQUESTS[signal]()
        try:
            message.ParseFromString(body)
        except DecodeError as error:
            raise BodyRejected(400, f"body is not a protobuf {name}: {error}") from None
        walk = MessageWalk()
        value = walk.request(message, signal)
        repaired = walk.repaired()
    else:
        try:
            decoded = decode_storable(body)
        except TooDeep as error:
            raise BodyRejected(400, f"body is not storable JSON: {error}") from None
        except ValueError as error:
            raise BodyRejected(400, f"body is not JSON: {error}") from None
        value, repaired = decoded.value, decoded.repaired
        if not isinstance(value, dict):
            raise BodyRejected(400, f"body is not an OTLP/JSON {name} object")
        _check_json_shape(value, signal, name)
    return value, repaired


def _check_json_shape(value: dict[str, Any], signal: Signal, name: str) -> None:
    """Refuse an OTLP/JSON body whose levels are not lists of objects, or whose ids are not hex.

    The generic protobuf JSON parser would check every field, but takes seconds for a batch the
    receiver stores in less; what the mapping reads is checked here and the rest is ignored, as the
    specification asks of unknown fields.
    """
    levels = LEVELS[signal]
    rows: list[Any] = [value]
    for depth, key in enumerate(levels):
        found: list[Any] = []
        for row in rows:
            items = row.get(key, [])
            if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
                where = ".".join(levels[: depth + 1])
                raise BodyRejected(400, f"body is not an OTLP/JSON {name}: {where} is not a list of objects")
            found.extend(items)
        rows = found
    for record in rows:
        for field in ("traceId", "spanId", "parentSpanId"):
            text = record.get(field)
            if text in (None, ""):
                continue
            if not isinstance(text, str) or len(text) % 2 or not all(c in HEX for c in text):
                raise BodyRejected(400, f"{field} {str(text)[:64]!r} is not hex, as OTLP/JSON writes ids")
            record[field] = text.lower()


LEVELS: dict[str, tuple[str, ...]] = {
    "logs": ("resourceLogs", "scopeLogs", "logRecords"),
    "traces": ("resourceSpans", "scopeSpans", "spans"),
    "metrics": ("resourceMetrics", "scopeMetrics", "metrics"),
}
HEX = frozenset("0123456789abcdefABCDEF")


class MessageWalk:
    """A parsed export request as the OTLP/JSON dict the mapping reads: ids as hex, 64-bit integers
    as numbers, the fields the mapping uses and no others.

    ``MessageToDict`` would give the same shape with base64 ids, at ten times the cost. Strings are
    made storable on the way (a NUL, which protobuf allows and no database text does, becomes
    U+FFFD and is counted), and values nested deeper than a stored JSON may be are refused.
    """

    def __init__(self) -> None:
        self.replaced = 0

    def repaired(self) -> str:
        if not self.replaced:
            return ""
        return (
            f"replaced {self.replaced} NUL by U+FFFD, which no database text can hold; the records are kept"
        )

    def request(self, message: Any, signal: Signal) -> dict[str, Any]:
        if signal == "logs":
            return {"resourceLogs": [self._resource_logs(r) for r in message.resource_logs]}
        if signal == "traces":
            return {"resourceSpans": [self._resource_spans(r) for r in message.resource_spans]}
        return {}

    def _text(self, text: str) -> str:
        if "\x00" in text:
            self.replaced += text.count("\x00")
            return text.replace("\x00", REPLACEMENT)
        return text

    def _attributes(self, pairs: Any, depth: int = 0) -> list[dict[str, Any]]:
        return [{"key": self._text(pair.key), "value": self._value(pair.value, depth + 1)} for pair in pairs]

    def _value(self, value: Any, depth: int) -> dict[str, Any]:
        if depth > MAX_JSON_DEPTH:
            raise BodyRejected(400, f"an attribute value is nested more than {MAX_JSON_DEPTH} levels deep")
        kind = value.WhichOneof("value")
        if kind == "string_value":
            return {"stringValue": self._text(value.string_value)}
        if kind == "int_value":
            return {"intValue": value.int_value}
        if kind == "double_value":
            return {"doubleValue": value.double_value}
        if kind == "bool_value":
            return {"boolValue": value.bool_value}
        if kind == "bytes_value":
            return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
        if kind == "array_value":
            return {"arrayValue": {"values": [self._value(v, depth + 1) for v in value.array_value.values]}}
        if kind == "kvlist_value":
            return {"kvlistValue": {"values": self._attributes(value.kvlist_value.values, depth)}}
        return {}

    def _resource(self, resource: Any) -> dict[str, Any]:
        return {"attributes": self._attributes(resource.attributes)}

    def _resource_logs(self, resource_logs: Any) -> dict[str, Any]:
        return {
            "resource": self._resource(resource_logs.resource),
            "scopeLogs": [
                {"logRecords": [self._log_record(record) for record in scope.log_records]}
                for scope in resource_logs.scope_logs
            ],
        }

    def _log_record(self, record: Any) -> dict[str, Any]:
        return {
            "timeUnixNano": record.time_unix_nano,
            "observedTimeUnixNano": record.observed_time_unix_nano,
            "body": self._value(record.body, 1),
            "attributes": self._attributes(record.attributes),
            "traceId": record.trace_id.hex(),
            "spanId": record.span_id.hex(),
            "eventName": self._text(record.event_name),
        }

    def _resource_spans(self, resource_spans: Any) -> dict[str, Any]:
        return {
            "resource": self._resource(resource_spans.resource),
            "scopeSpans": [
                {"spans": [self._span(span) for span in scope.spans]} for scope in resource_spans.scope_spans
            ],
        }

    def _span(self, span: Any) -> dict[str, Any]:
        return {
            "traceId": span.trace_id.hex(),
            "spanId": span.span_id.hex(),
            "name": self._text(span.name),
            "startTimeUnixNano": span.start_time_unix_nano,
            "endTimeUnixNano": span.end_time_unix_nano,
            "attributes": self._attributes(span.attributes),
            "status": {"code": int(span.status.code)},
        }


def otlp_success(signal: Signal, encoding: Encoding, *, rejected: int, message: str) -> bytes:
    """The ``Export*ServiceResponse`` body: empty of ``partial_success`` unless records were
    rejected (or a warning is due), as the specification asks."""
    response_class, rejected_field = RESPONSES[signal]
    response = response_class()
    if rejected or message:
        partial = response.partial_success
        setattr(partial, rejected_field, rejected)
        partial.error_message = message
    if encoding == "protobuf":
        return bytes(response.SerializeToString())
    return json.dumps(MessageToDict(response)).encode("utf-8")


def otlp_status(encoding: Encoding, *, code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` body for a 4xx or 5xx answer."""
    status = status_pb2.Status(code=code, message=message)
    if encoding == "protobuf":
        return bytes(status.SerializeToString())
    return json.dumps(MessageToDict(status)).encode("utf-8")
