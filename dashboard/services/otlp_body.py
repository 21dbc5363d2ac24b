"""OTLP/HTTP bodies in both encodings, read with the OpenTelemetry project's own protobuf classes.

A request body is decoded into the OTLP/JSON shape :mod:`projections.formats.otlp` reads: a
``application/x-protobuf`` body is parsed into its ``Export*ServiceRequest`` and converted with
``MessageToDict``; an ``application/json`` body is parsed into the same message after its hex ids
are turned into the base64 the generic protobuf JSON mapping expects, which checks its shape, and
converted back. Either way the trace and span ids end as hex, as the OTLP/JSON encoding has them
(OpenTelemetry Protocol specification 1.x, "JSON Protobuf Encoding"), and the value passes the
same storable-JSON decoder as every other body (NUL and lone surrogates replaced, nesting bounded).

Answers are encoded the way the request was: an ``Export*ServiceResponse`` (with
``partial_success`` when records were rejected) on success, a ``google.rpc.Status`` on failure.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Literal

from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from dashboard.services.api_body import BodyRejected
from projections.formats.storable import TooDeep, decode_storable

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
    message = REQUESTS[signal]()
    if encoding == "protobuf":
        try:
            message.ParseFromString(body)
        except DecodeError as error:
            raise BodyRejected(400, f"body is not a protobuf {message.DESCRIPTOR.name}: {error}") from None
    else:
        value = _storable(body)
        if not isinstance(value, dict):
            raise BodyRejected(400, f"body is not a JSON {message.DESCRIPTOR.name} object")
        if signal != "metrics":
            _convert_ids(value, signal, _hex_to_base64)
        try:
            ParseDict(value, message, ignore_unknown_fields=True)
        except ParseError as error:
            raise BodyRejected(400, f"body is not an OTLP/JSON {message.DESCRIPTOR.name}: {error}") from None
    as_dict = MessageToDict(message)
    if signal != "metrics":
        _convert_ids(as_dict, signal, _base64_to_hex)
    # Strings inside a protobuf may hold NUL, which no database text accepts: the same decoder as
    # every other body replaces it and says so.
    decoded = decode_storable(json.dumps(as_dict, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return decoded.value, decoded.repaired


def _storable(body: bytes) -> Any:
    try:
        return decode_storable(body).value
    except TooDeep as error:
        raise BodyRejected(400, f"body is not storable JSON: {error}") from None
    except ValueError as error:
        raise BodyRejected(400, f"body is not JSON: {error}") from None


def _records(value: MutableMapping[str, Any], signal: Signal) -> Iterator[MutableMapping[str, Any]]:
    outer, inner, leaf = (
        ("resourceLogs", "scopeLogs", "logRecords")
        if signal == "logs"
        else ("resourceSpans", "scopeSpans", "spans")
    )
    for resource in _objects(value.get(outer)):
        for scope in _objects(resource.get(inner)):
            for record in _objects(scope.get(leaf)):
                yield record
                yield from _objects(record.get("links"))


def _objects(value: Any) -> list[MutableMapping[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _convert_ids(value: MutableMapping[str, Any], signal: Signal, convert: Callable[[str, str], str]) -> None:
    for record in _records(value, signal):
        for name in ("traceId", "spanId", "parentSpanId"):
            if isinstance(record.get(name), str) and record[name]:
                record[name] = convert(record[name], name)


def _hex_to_base64(text: str, name: str) -> str:
    try:
        return base64.b64encode(bytes.fromhex(text)).decode("ascii")
    except ValueError:
        raise BodyRejected(400, f"{name} {text[:64]!r} is not hex, as OTLP/JSON writes ids") from None


def _base64_to_hex(text: str, name: str) -> str:
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        raise BodyRejected(400, f"{name} is not an id") from None


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
