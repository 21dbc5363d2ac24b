"""OTLP export requests as plain dicts: log records and spans with their resource, scope and attributes.

The receiver hands this module an ``ExportLogsServiceRequest`` or ``ExportTraceServiceRequest`` in
the OTLP/JSON shape (OpenTelemetry Protocol specification 1.x, "JSON Protobuf Encoding"): field
names in lowerCamelCase, 64-bit integers as decimal strings or numbers, ``traceId`` and ``spanId``
as hex (not base64, unlike the generic protobuf JSON mapping), enums as integers. A protobuf body
is converted to that same shape before it gets here, so both encodings are read by this one walk.

Each record gets its position in the request (1-based, counted across every resource and scope),
which is how the receiver names a rejected record in its ``partial_success`` message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from projections.formats.reading.limits import EARLIEST_TIME, LATEST_TIME
from projections.normalized import JSON, LineError, RequestRecord, SessionImport
from projections.usage import MAX_TOKEN_COUNT

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LogItem:
    """One OTLP log record with what it inherits from its resource."""

    position: int
    """The record's place in the request, from 1."""
    resource: Mapping[str, JSON]
    attributes: Mapping[str, JSON]
    body: JSON
    time: datetime | None
    """``timeUnixNano``, else ``observedTimeUnixNano``; ``None`` when neither is set."""
    trace_id: str
    span_id: str
    event_name: str = ""
    """The record's own ``eventName`` (OTLP 1.5 and later), which some exporters set instead of
    the ``event.name`` attribute."""


@dataclass(frozen=True, slots=True)
class SpanItem:
    """One OTLP span with what it inherits from its resource."""

    position: int
    resource: Mapping[str, JSON]
    attributes: Mapping[str, JSON]
    name: str
    trace_id: str
    span_id: str
    start: datetime | None
    end: datetime | None
    status_code: int
    """0 unset, 1 ok, 2 error (``Status.StatusCode``)."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction the telemetry shows (Claude Code's ``compact`` call): from its start to its end,
    the conversation's prefix was rewritten, which the transcript predictor must know."""

    key: str
    """The compaction call's request key, which names the compaction once however often it is sent."""
    started_at: datetime
    ended_at: datetime


@dataclass(slots=True)
class TelemetrySession:
    """A session gathered from one export request: its facts and its usage-only requests."""

    imported: SessionImport
    records: list[RequestRecord]
    positions: list[int]
    """The positions of every record of the request that went into this session, for the answer
    when the store refuses the session as a whole."""
    compactions: list[Compaction] = field(default_factory=list)


LABEL_PREFIXES = ("user.", "organization.", "team.")
LABEL_KEYS = frozenset({"department", "cost_center", "enduser.id"})
"""Attributes kept as session labels: who ran the session and the team keys Claude Code's
monitoring documentation suggests setting through ``OTEL_RESOURCE_ATTRIBUTES``."""
MAX_LABEL_LENGTH = 200


def session_labels(attrs: Mapping[str, JSON]) -> dict[str, str]:
    """The label attributes of ``attrs`` (see :data:`LABEL_PREFIXES`) with their text values."""
    labels: dict[str, str] = {}
    for key, value in attrs.items():
        if not (key.startswith(LABEL_PREFIXES) or key in LABEL_KEYS) or len(key) > MAX_LABEL_LENGTH:
            continue
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            labels[key] = str(value).strip()[:MAX_LABEL_LENGTH]
    return labels


def token_count(attrs: Mapping[str, JSON], *names: str) -> int | None:
    """The first of ``names`` present in ``attrs`` as a token count; ``None`` when none is.

    Exporters send counts as integers, and some (Claude Code's events) as decimal strings; both are
    read. A negative, fractional or absurd count raises :class:`BadValue` naming the attribute.
    """
    for name in names:
        value = attrs.get(name)
        if value is None:
            continue
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadValue(name, f"expected a non-negative whole number of tokens, got {value!r}")
        if value > MAX_TOKEN_COUNT:
            raise BadValue(
                name, f"an absurd count {value} (more than {MAX_TOKEN_COUNT:,} tokens in one call)"
            )
        return value
    return None


def text(attrs: Mapping[str, JSON], *names: str) -> str:
    """The first of ``names`` that holds a non-empty text (or number), stripped; ``""`` otherwise."""
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return ""


class BadValue(ValueError):
    """A field of a record that is not what the specification says it is."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


def any_value(value: JSON) -> JSON:
    """The Python value of an OTLP ``AnyValue`` object (``{"stringValue": ...}`` and its kin)."""
    if not isinstance(value, Mapping):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        raw = value["intValue"]
        try:
            return int(raw)
        except (TypeError, ValueError):
            return raw
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        items = value["arrayValue"].get("values", []) if isinstance(value["arrayValue"], Mapping) else []
        return [any_value(item) for item in items]
    if "kvlistValue" in value:
        listed = value["kvlistValue"]
        return attributes(listed.get("values", []) if isinstance(listed, Mapping) else [])
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(pairs: JSON) -> dict[str, JSON]:
    """A ``KeyValue`` list as a dict; a later key wins, as the specification leaves duplicates undefined."""
    out: dict[str, JSON] = {}
    if not isinstance(pairs, list):
        return out
    for pair in pairs:
        if isinstance(pair, Mapping) and isinstance(pair.get("key"), str):
            out[pair["key"]] = any_value(pair.get("value"))
    return out


def unix_nano(value: JSON, field: str) -> datetime | None:
    """A ``fixed64`` nanosecond time as a UTC datetime; ``None`` for 0 or absent (the "unknown" time)."""
    if value is None:
        return None
    try:
        nanos = int(value)
    except (TypeError, ValueError):
        raise BadValue(field, f"expected nanoseconds since the epoch, got {value!r}") from None
    if nanos == 0:
        return None
    try:
        moment = EPOCH + timedelta(microseconds=nanos // 1000)
    except OverflowError:
        raise BadValue(field, f"{nanos} ns is not a time a calendar holds") from None
    if not EARLIEST_TIME <= moment <= LATEST_TIME:
        raise BadValue(field, f"{nanos} ns is outside {EARLIEST_TIME.date()} … {LATEST_TIME.date()}")
    return moment


def log_records(request: Mapping[str, JSON], errors: list[LineError], path: str) -> Iterator[LogItem]:
    """Every log record of an ``ExportLogsServiceRequest``; a record with a bad time is reported in
    ``errors`` and skipped."""
    position = 0
    for resource_logs in _list(request.get("resourceLogs")):
        resource = attributes(_dict(resource_logs.get("resource")).get("attributes"))
        for scope_logs in _list(resource_logs.get("scopeLogs")):
            for record in _list(scope_logs.get("logRecords")):
                position += 1
                try:
                    time = unix_nano(record.get("timeUnixNano"), "timeUnixNano") or unix_nano(
                        record.get("observedTimeUnixNano"), "observedTimeUnixNano"
                    )
                except BadValue as bad:
                    errors.append(LineError(path, position, bad.field, bad.reason))
                    continue
                yield LogItem(
                    position=position,
                    resource=resource,
                    attributes=attributes(record.get("attributes")),
                    body=any_value(record.get("body")),
                    time=time,
                    trace_id=str(record.get("traceId") or ""),
                    span_id=str(record.get("spanId") or ""),
                    event_name=str(record.get("eventName") or ""),
                )


def spans(request: Mapping[str, JSON], errors: list[LineError], path: str) -> Iterator[SpanItem]:
    """Every span of an ``ExportTraceServiceRequest``; a span with a bad time is reported and skipped."""
    position = 0
    for resource_spans in _list(request.get("resourceSpans")):
        resource = attributes(_dict(resource_spans.get("resource")).get("attributes"))
        for scope_spans in _list(resource_spans.get("scopeSpans")):
            for span in _list(scope_spans.get("spans")):
                position += 1
                try:
                    start = unix_nano(span.get("startTimeUnixNano"), "startTimeUnixNano")
                    end = unix_nano(span.get("endTimeUnixNano"), "endTimeUnixNano")
                except BadValue as bad:
                    errors.append(LineError(path, position, bad.field, bad.reason))
                    continue
                status = _dict(span.get("status")).get("code", 0)
                yield SpanItem(
                    position=position,
                    resource=resource,
                    attributes=attributes(span.get("attributes")),
                    name=str(span.get("name") or ""),
                    trace_id=str(span.get("traceId") or ""),
                    span_id=str(span.get("spanId") or ""),
                    start=start,
                    end=end,
                    status_code=_status_code(status),
                )


def record_count(request: Mapping[str, JSON], signal: str) -> int:
    """How many log records (``signal="logs"``), spans (``"traces"``) or data points (``"metrics"``)
    a request holds, for the batch limits and the metrics acknowledgement."""
    outer, inner, leaf = {
        "logs": ("resourceLogs", "scopeLogs", "logRecords"),
        "traces": ("resourceSpans", "scopeSpans", "spans"),
        "metrics": ("resourceMetrics", "scopeMetrics", "metrics"),
    }[signal]
    return sum(
        len(_list(scope.get(leaf)))
        for resource in _list(request.get(outer))
        for scope in _list(resource.get(inner))
    )


def _status_code(value: JSON) -> int:
    # JSON encodes enums as integers; a protobuf body converted with enum names says them by name.
    names = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
    if isinstance(value, str):
        return names.get(value, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: JSON) -> list[Mapping[str, JSON]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _dict(value: JSON) -> Mapping[str, JSON]:
    return value if isinstance(value, Mapping) else {}
