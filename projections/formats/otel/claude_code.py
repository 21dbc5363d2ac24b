"""Claude Code's own telemetry events (OTLP log records) → sessions of usage-only requests.

Follows Claude Code's monitoring documentation (code.claude.com/docs/en/monitoring-usage, read
2026-12-03, the page of Claude Code v2.1.222). Each event is a log record whose body is
``claude_code.<name>`` and whose attributes carry ``event.name`` (``<name>`` without the prefix),
``event.timestamp`` (ISO 8601), ``event.sequence`` (a counter per session) and the standard
attributes (``session.id``, ``user.id``, ``user.account_uuid``, ``user.account_id``,
``user.email``, ``organization.id``, ``terminal.type``, custom ``OTEL_RESOURCE_ATTRIBUTES`` keys);
the resource carries ``service.name`` ``claude-code`` and ``service.version``, the client release.

- ``api_request``: one call with ``model``, ``input_tokens``, ``output_tokens``,
  ``cache_read_tokens``, ``cache_creation_tokens`` (Anthropic's own buckets: ``input_tokens`` is
  exclusive of the cache, so they map one to one), ``cost_usd``, ``duration_ms``, ``request_id``,
  ``client_request_id``, ``query_source``, ``agent.name``. The event is written once the call has
  ended (it carries the call's duration and usage), so the call started ``duration_ms`` before it.
  Its key is ``request_id``, the ``requestId`` a transcript of the same session stores too.
- ``api_error``: a call that failed, with ``status_code`` and ``error``; stored without usage.
- ``user_prompt``, ``tool_result``: no call, but the session's span of time, and its title from the
  first prompt when prompts are logged (``OTEL_LOG_USER_PROMPTS=1``).

Where the documentation and this project's issue text differ, the documentation wins: the tool
result's name is ``tool_name`` (older pages said ``name``), counts may arrive as integers or
decimal strings, and the event name is in the body as well as in ``event.name``. Exports seen in
public test fixtures also set the record's own ``eventName`` (OTLP 1.5) or put ``session.id`` on the
resource; both are read (record attributes win over the resource's).

Events are not stored as a session log: ``event.sequence`` numbers every kind of event (tool
decisions, responses, ...), so the four kinds read here would leave gaps a fold refuses. A
compaction is the exception: its call (``query_source`` ``compact``) is returned as a
:class:`~projections.formats.otel.otlp.Compaction`, which the store writes as the
``compaction/start`` and ``compaction/end`` events a transcript's compaction gives, so the
transcript predictor expects the prefix to be written again after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from projections.client_version import client_version
from projections.formats.otel.otlp import (
    BadValue,
    Compaction,
    LogItem,
    TelemetrySession,
    session_labels,
    text,
    token_count,
)
from projections.formats.reading.times import parse_time
from projections.normalized import JSON, Lineage, LineError, RequestRecord, SessionImport
from projections.usage import UsageError, anthropic_usage

FORMAT = "claude-code-otel"
EVENT_PREFIX = "claude_code."
CALL_EVENTS = frozenset({"api_request", "api_error"})
SESSION_EVENTS = frozenset({"user_prompt", "tool_result"})
MAIN_QUERY_SOURCES = frozenset({"", "repl_main_thread", "main"})
"""``query_source`` values of the conversation's own calls (the event's ``repl_main_thread``, the
metrics' ``main``); a named subagent (``agent.name``, or the metrics' ``subagent``) is a subagent's,
and any other subsystem (``compact``, the metrics' ``auxiliary``, ...) is a side call."""
USAGE_ATTRIBUTES = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "cost_usd",
    "cost_usd_micros",
    "duration_ms",
    "speed",
    "effort",
)
"""The attributes of an ``api_request`` kept as the request's source usage fields."""
REDACTED = "<REDACTED>"
TITLE_LENGTH = 120


COMPACT_QUERY_SOURCE = "compact"
"""The ``query_source`` of the call that summarises a conversation when it is compacted."""


@dataclass(slots=True)
class _Gathered:
    imported: SessionImport
    records: list[RequestRecord] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)


def event_name(item: LogItem) -> str:
    """The event's name without the ``claude_code.`` prefix; ``""`` when it is not a Claude Code event."""
    name = text(item.attributes, "event.name") or item.event_name
    body = item.body if isinstance(item.body, str) else ""
    if not name and body.startswith(EVENT_PREFIX):
        name = body
    # Claude Code sends the bare name in event.name; other senders put the prefixed one there.
    return name.removeprefix(EVENT_PREFIX)


def claude_code_sessions(
    items: Iterable[LogItem], path: str, errors: list[LineError]
) -> list[TelemetrySession]:
    """The sessions the Claude Code events among ``items`` describe, grouped by ``session.id``.

    Other log records are not Claude Code's and are skipped. A Claude Code event that cannot be read
    (no ``session.id``, no time, a bad count) is reported in ``errors`` at its position and skipped.
    """
    sessions: dict[str, _Gathered] = {}
    for item in items:
        name = event_name(item)
        if name not in CALL_EVENTS and name not in SESSION_EVENTS:
            continue
        attrs: dict[str, JSON] = {**item.resource, **item.attributes}
        try:
            session_id = text(attrs, "session.id")
            if not session_id:
                raise BadValue("session.id", "a Claude Code event without the session it belongs to")
            moment = _event_time(attrs, item)
            gathered = sessions.get(session_id)
            if gathered is None:
                gathered = sessions[session_id] = _Gathered(
                    SessionImport(external_id=session_id, format=FORMAT, path=path, items=iter(()))
                )
            record = _call(name, attrs, moment, item.position) if name in CALL_EVENTS else None
        except BadValue as bad:
            errors.append(LineError(path, item.position, bad.field, bad.reason))
            continue
        _note_session(gathered.imported, name, attrs, moment)
        gathered.positions.append(item.position)
        if record is not None:
            gathered.records.append(record)
            if name == "api_request" and text(attrs, "query_source") == COMPACT_QUERY_SOURCE:
                gathered.compactions.append(Compaction(record.key, record.started_at or moment, moment))
    return [TelemetrySession(g.imported, g.records, g.positions, g.compactions) for g in sessions.values()]


def _event_time(attrs: Mapping[str, JSON], item: LogItem) -> datetime:
    stamp = attrs.get("event.timestamp")
    if stamp is not None:
        try:
            return parse_time(stamp)
        except ValueError as error:
            raise BadValue("event.timestamp", str(error)) from None
    if item.time is None:
        raise BadValue("event.timestamp", "an event with neither event.timestamp nor a record time")
    return item.time


def _call(name: str, attrs: Mapping[str, JSON], moment: datetime, position: int) -> RequestRecord:
    duration = token_count(attrs, "duration_ms")
    started = moment - timedelta(milliseconds=duration) if duration is not None else moment
    usage = None
    status = None
    if name == "api_request":
        raw = {
            "input_tokens": token_count(attrs, "input_tokens"),
            "output_tokens": token_count(attrs, "output_tokens"),
            "cache_read_input_tokens": token_count(attrs, "cache_read_tokens"),
            "cache_creation_input_tokens": token_count(attrs, "cache_creation_tokens"),
        }
        try:
            usage = anthropic_usage(raw)
        except UsageError as error:
            raise BadValue(error.field, error.reason) from None
        kept = {key: attrs[key] for key in USAGE_ATTRIBUTES if key in attrs}
        usage = replace(usage, raw=kept)
    else:
        status = token_count(attrs, "status_code")
        if status is not None and not 100 <= status <= 599:
            raise BadValue("status_code", f"expected an HTTP status, got {status}")
    version = text(attrs, "service.version", "app.version")
    return RequestRecord(
        key=_key(name, attrs, moment)[:200],
        ordinal=0,
        lineage=_lineage(attrs),
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=text(attrs, "model"),
        started_at=started,
        usage=usage,
        status=status,
        line=position,
        client_version=client_version("claude-code", version) if version else "",
    )


def _key(name: str, attrs: Mapping[str, JSON], moment: datetime) -> str:
    """The call's identity in its session: the API's request id, else the client's, else the event's
    time and sequence number, which a retried export repeats exactly."""
    request_id = text(attrs, "request_id")
    if request_id:
        return request_id if name == "api_request" else f"{request_id}:error"
    client_id = text(attrs, "client_request_id")
    if client_id:
        return f"client:{client_id}" + (":error" if name == "api_error" else "")
    sequence = text(attrs, "event.sequence")
    return f"otel:{name}:{moment.isoformat()}" + (f"#{sequence}" if sequence else "")


def _lineage(attrs: Mapping[str, JSON]) -> Lineage:
    if text(attrs, "agent.name"):
        return "subagent"
    source = text(attrs, "query_source")
    if source in MAIN_QUERY_SOURCES:
        return "main"
    if source == COMPACT_QUERY_SOURCE:
        return "compaction"
    return "subagent" if source == "subagent" else "side"


def _note_session(imported: SessionImport, name: str, attrs: Mapping[str, JSON], moment: datetime) -> None:
    if imported.started_at is None or moment < imported.started_at:
        imported.started_at = moment
    if imported.ended_at is None or moment > imported.ended_at:
        imported.ended_at = moment
    for key, value in session_labels(attrs).items():
        imported.labels.setdefault(key, value)
    prompt = text(attrs, "prompt") if name == "user_prompt" else ""
    if prompt and prompt != REDACTED and not imported.title:
        imported.title = " ".join(prompt.split())[:TITLE_LENGTH]
