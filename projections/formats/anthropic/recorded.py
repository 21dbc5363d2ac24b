"""Calls recorded by ``manage.py record``, read as the new calls of a session.

The recording proxy writes each call as a claude-trace record (``{request: {timestamp, method, url,
headers, body}, response: {timestamp, status_code, headers, body | body_raw}, logged_at}``) and
hands a batch of them here, in memory, with the seq its session's log has reached. Anthropic
Messages records are read by the claude-trace parser, OpenAI Chat and Responses records by the
capture parser, so a recorded call is stored exactly as the same call in a claude-trace log is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from projections.formats.anthropic.claude_trace import FORMAT as CLAUDE_TRACE_FORMAT
from projections.formats.anthropic.claude_trace import parse_trace_record
from projections.formats.reading.times import optional_time
from projections.formats.traffic.captures import OPENAI_FORMAT, parse_capture_record
from projections.formats.traffic.exchanges import BadRecord, Exchange, cache_request_event
from projections.normalized import JSON, LineError, SessionImport, SessionItem, Usage
from projections.usage import UsageError, normalize_usage


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded call: its claude-trace record and the id the proxy gave it."""

    call_id: str
    """Unique per call; the request's key when the response carried no id of its own."""
    record: dict[str, JSON]


def record_path(record: dict[str, JSON]) -> str:
    """The URL path a record's request went to ("" when it has none)."""
    request = record.get("request")
    url = request.get("url") if isinstance(request, dict) else None
    return urlsplit(url).path if isinstance(url, str) else ""


def parse_recorded(record: dict[str, JSON]) -> Exchange | None:
    """The call of a recorded record; ``None`` for traffic that is not a model call (a model list)."""
    if record_path(record).endswith("/messages"):
        return parse_trace_record(record)
    if record_path(record).endswith(("/chat/completions", "/responses")):
        return parse_capture_record(record)
    return None


def call_key(call: RecordedCall, exchange: Exchange) -> str:
    """The stored key of a call: the provider's request or message id, else the proxy's call id."""
    return exchange.key or f"record-{call.call_id}"


def recorded_session(
    *,
    external_id: str,
    calls: Iterable[RecordedCall],
    first_seq: int,
    skip_keys: frozenset[str] = frozenset(),
    path: str,
) -> SessionImport:
    """The ``calls`` as a session import whose events start at ``first_seq``.

    Calls whose key is in ``skip_keys`` (already stored: a spooled batch ingested twice) and records
    that are not model calls are left out; a record that cannot be read becomes a
    :class:`LineError` naming ``path`` and the offending field.
    """
    session = SessionImport(external_id=external_id, format=CLAUDE_TRACE_FORMAT, path=path, items=iter(()))
    # A batch is small and the session's format and times are read before its items: read it now.
    items: list[SessionItem] = []
    seq = first_seq
    for call in calls:
        try:
            exchange = parse_recorded(call.record)
        except BadRecord as bad:
            items.append(LineError(path, None, bad.field, f"call {call.call_id}: {bad.reason}"))
            continue
        if exchange is None or call_key(call, exchange) in skip_keys:
            continue
        exchange = dataclasses.replace(
            exchange,
            key=call_key(call, exchange),
            # claude-trace logs no first byte; the proxy does, beside the request and response.
            first_token_at=exchange.first_token_at
            or optional_time(call.record.get("first_token_at"), numbers="auto"),
        )
        usage, error = _usage(exchange, path)
        if error is not None:
            items.append(error)
        items.append(cache_request_event(seq, exchange, usage, seq))
        items.append(exchange.record(key=exchange.key, ordinal=seq, usage=usage, line=seq))
        seq += 1
        _widen_times(session, exchange)
        if exchange.provider == "openai":
            session.format = OPENAI_FORMAT
    session.items = iter(items)
    return session


def _widen_times(session: SessionImport, exchange: Exchange) -> None:
    started = exchange.started_at
    if started is None:
        return
    if session.started_at is None or started < session.started_at:
        session.started_at = started
    if session.ended_at is None or started > session.ended_at:
        session.ended_at = started


def _usage(exchange: Exchange, path: str) -> tuple[Usage | None, LineError | None]:
    if exchange.raw_usage is None:
        return None, None
    try:
        return normalize_usage(exchange.usage_shape, exchange.raw_usage), None
    except UsageError as error:
        return None, LineError(path, None, f"usage.{error.field}", error.reason)
