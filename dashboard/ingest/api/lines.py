"""The ingestion API's use case: a bounded NDJSON body → sessions stored through :func:`ingest_session`.

Body lines (DESIGN §4, §8):

- a dsh header ``{"type": "session", "version", "id", "createdAt", ...}`` starts a session;
- dsh event lines (and packed chunk rows) belong to the last header before them, and are decoded by
  the dsh importer's own per-record decoder, so the API and files agree on every field;
- ``{"type": "request", "session": id, "request": {...}, "response": {...}, "started_at"?,
  "first_token_at"?, "lineage"?}`` is one provider call as sent and answered, read by the capture
  importer's per-record parser. ``session`` defaults to the last header's id. Its key is the
  provider's request or message id, else a digest of the line, so a resent line is a duplicate.

A session may be split over several bodies; each body must repeat the session's header line before
its events. A body is committed once, each session in its own savepoint, so a bad session is rolled
back alone. Each line is decoded as a file's line is (:func:`decode_storable`: nesting, NUL, lone
surrogates), and a body is refused with 413 once it holds more sessions or records than
:class:`BatchLimits` allows, so no batch outlives the worker's timeout.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from django.conf import settings
from django.db import transaction

from dashboard.fleet.rollups import RollupBuckets
from dashboard.ingest.api.body import BodyRejected
from dashboard.ingest.blocks import BlockStore
from dashboard.ingest.files import IngestSummary, ingest_session, link_parents
from dashboard.ingest.followups import followups_gathered
from dashboard.jobs.tally import job_tally_add
from dashboard.models import Source
from dashboard.storage.db_retry import retrying
from projections.events import is_known_event_type
from projections.formats.dsh.sessions import FORMAT as DSH_FORMAT
from projections.formats.dsh.sessions import decode_record, parse_header
from projections.formats.reading.storable import TooDeep, decode_storable
from projections.formats.traffic.captures import ANTHROPIC_FORMAT, OPENAI_FORMAT, parse_capture_record
from projections.formats.traffic.exchanges import BadRecord
from projections.normalized import (
    EventRecord,
    FormatError,
    Lineage,
    LineError,
    LineNotice,
    RequestRecord,
    SessionImport,
)
from projections.usage import UsageError, normalize_usage

BODY = "body"
MAX_REPORTED_ERRORS = 1000
"""What enqueueing raises when the broker is unreachable: the rows are committed by then."""
LINEAGES: tuple[Lineage, ...] = ("main", "subagent", "side")
STEP_SESSIONS = 50
"""Sessions a background batch commits at a time, so its progress shows between commits."""

StepCallback = Callable[[int, int], None]
"""Called after each committed step with the sessions stored so far and the batch's sessions."""


@dataclass(frozen=True)
class BatchLimits:
    """The most one request may carry; a body past either is refused with 413 (docs/api.md)."""

    sessions: int
    records: int
    """Event lines (a packed row counts its members) and request lines together."""

    @classmethod
    def from_settings(cls) -> BatchLimits:
        return cls(sessions=settings.CACHESCOPE_API_MAX_SESSIONS, records=settings.CACHESCOPE_API_MAX_RECORDS)

    @classmethod
    def for_batches(cls) -> BatchLimits:
        """The limits of a batch stored in the background, where no web worker waits on it."""
        return cls(
            sessions=settings.CACHESCOPE_API_BATCH_MAX_SESSIONS,
            records=settings.CACHESCOPE_API_BATCH_MAX_RECORDS,
        )


@dataclass
class PendingSession:
    """A session being gathered from the body, before it is stored (the OTLP receiver gathers its
    sessions as these too, so both store them through :func:`pending_store`)."""

    imported: SessionImport
    items: list[EventRecord | RequestRecord] = field(default_factory=list)
    has_header: bool = False


@dataclass
class ApiIngestResult:
    """What one API call stored, answered as JSON."""

    summary: IngestSummary
    errors: list[LineError]
    sessions: list[str]
    analysis_pending: bool = False
    notices: list[LineNotice] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        return self.summary.events_added + self.summary.requests_added

    def as_dict(self) -> dict[str, Any]:
        errors = sorted(self.errors, key=lambda e: e.line if e.line is not None else 0)
        answer: dict[str, Any] = {
            "accepted": self.accepted,
            "duplicates": self.summary.duplicates,
            "duplicate_events": self.summary.duplicate_events,
            "duplicate_requests": self.summary.duplicate_requests,
            "events": self.summary.events_added,
            "requests": self.summary.requests_added,
            "sessions": len(self.sessions),
            "errors": [
                {"line": e.line, "field": e.field, "message": e.reason} for e in errors[:MAX_REPORTED_ERRORS]
            ],
            "analysis": "pending" if self.analysis_pending else "queued",
        }
        if self.notices:
            answer["notices"] = [
                {"line": n.line, "field": n.field, "message": n.reason}
                for n in self.notices[:MAX_REPORTED_ERRORS]
            ]
        if len(errors) > MAX_REPORTED_ERRORS:
            answer["errors_truncated"] = len(errors) - MAX_REPORTED_ERRORS
        return answer


def api_ingest(
    *,
    body: IO[bytes],
    source: Source,
    limits: BatchLimits | None = None,
    on_step: StepCallback | None = None,
    job_id: int | None = None,
) -> ApiIngestResult:
    """Store every session of an NDJSON ``body`` for ``source``.

    Raises :class:`BodyRejected` (400) when no line of the body is a JSON object, and (413) when it
    holds more than ``limits`` (the settings' by default). A broker that is down when the follow-ups
    are enqueued does not lose data: the sessions are committed first, the result says
    ``analysis_pending``, and the next ingest of the same session enqueues again.

    Without ``on_step`` the body is one commit. With it (a background batch) it is committed
    :data:`STEP_SESSIONS` sessions at a time and ``on_step`` is called after each commit, so the
    progress is visible to others; each session is stored exactly as in one commit. Each step's
    counts are added to job ``job_id``, when given, in the step's own transaction.
    """
    read = _read_body(body, f"api/{source.name}", limits or BatchLimits.from_settings())
    # Sessions are written in the order of their ids, so two batches that share sessions lock them in
    # the same order and cannot deadlock; a wait nobody ordered is retried as a whole batch (or step).
    pending = sorted(read.sessions, key=lambda s: s.imported.external_id)
    with followups_gathered() as gathered:
        if on_step is None:
            summary = retrying(lambda: pending_store(pending, source))
        else:
            summary = _store_in_steps(pending, source, on_step, job_id)
    summary.followups_pending.extend(gathered.refused)
    return ApiIngestResult(
        summary=summary,
        errors=read.errors + summary.errors,
        sessions=[s.imported.external_id for s in pending],
        analysis_pending=bool(summary.followups_pending),
        notices=read.notices + summary.notices,
    )


def pending_store(pending: list[PendingSession], source: Source, job_id: int | None = None) -> IngestSummary:
    """Write the sessions in one transaction, each in its own savepoint; a retry starts afresh.
    What they added is counted on job ``job_id``, when given, in the same transaction.

    Sessions are written in the order given: callers sort them by id, so two batches that share
    sessions lock them in the same order.
    """
    summary = IngestSummary()
    blocks = BlockStore()
    # One commit for the whole batch: each session is still its own savepoint, so a bad one is
    # rolled back alone, but the batch pays for one durable flush instead of one a session.
    rollups = RollupBuckets()
    with transaction.atomic():
        for session in pending:
            session.imported.items = iter(session.items)
            ingest_session(session.imported, source=source, summary=summary, blocks=blocks, rollups=rollups)
        # Each bucket once for the batch, in its transaction: the sums commit with the requests.
        rollups.refresh()
        link_parents(source)
        if job_id is not None:
            job_tally_add(
                job_id=job_id, counts=summary.added_counts(), session_ids=summary.changed_session_ids
            )
    summary.note_committed()
    return summary


def _store_in_steps(
    pending: list[PendingSession], source: Source, on_step: StepCallback, job_id: int | None
) -> IngestSummary:
    total = IngestSummary()
    for start in range(0, len(pending), STEP_SESSIONS):
        step = pending[start : start + STEP_SESSIONS]
        _add_summary(total, retrying(partial(pending_store, step, source, job_id)))
        total.note_committed()
        on_step(start + len(step), len(pending))
    return total


def _add_summary(total: IngestSummary, step: IngestSummary) -> None:
    total.sessions_added += step.sessions_added
    total.sessions_updated += step.sessions_updated
    total.sessions_unchanged += step.sessions_unchanged
    total.events_added += step.events_added
    total.requests_added += step.requests_added
    total.duplicate_events += step.duplicate_events
    total.duplicate_requests += step.duplicate_requests
    total.errors += step.errors
    total.notices += step.notices
    total.session_ids += step.session_ids
    total.changed_session_ids += step.changed_session_ids
    total.followups_pending += step.followups_pending


@dataclass
class _ReadBody:
    sessions: list[PendingSession]
    errors: list[LineError]
    notices: list[LineNotice]


def _read_body(body: IO[bytes], path: str, limits: BatchLimits) -> _ReadBody:
    sessions: dict[str, PendingSession] = {}
    errors: list[LineError] = []
    notices: list[LineNotice] = []
    current: PendingSession | None = None
    objects = 0
    records = 0
    first_problem = ""
    for number, raw in enumerate(body, start=1):
        if not raw.strip():
            continue
        try:
            decoded = decode_storable(raw)
        except (ValueError, TooDeep) as error:
            reason = f"not JSON: {error}" if not isinstance(error, TooDeep) else str(error)
            errors.append(LineError(BODY, number, "json" if isinstance(error, TooDeep) else "line", reason))
            first_problem = first_problem or f"line {number}: {reason}"
            continue
        value = decoded.value
        if decoded.repaired:
            notices.append(LineNotice(BODY, number, "json", decoded.repaired))
        if not isinstance(value, dict):
            reason = f"expected a JSON object, got {type(value).__name__}"
            errors.append(LineError(BODY, number, "line", reason))
            first_problem = first_problem or f"line {number}: {reason}"
            continue
        objects += 1
        kind = value.get("type")
        if kind == "session":
            current = _start_session(sessions, value, number, path, errors)
        elif kind == "request":
            _add_request(sessions, current, value, number, path, errors)
            records += 1
        elif current is None:
            errors.append(
                LineError(
                    BODY,
                    number,
                    "type",
                    "event line before any session header; start each body with the session's header line",
                )
            )
        else:
            records += _add_events(current, value, number, errors)
        _check_limits(len(sessions), records, number, limits)
    if not objects:
        raise BodyRejected(400, f"body is not NDJSON: {first_problem or 'it is empty'}")
    return _ReadBody(list(sessions.values()), errors, notices)


def _check_limits(sessions: int, records: int, number: int, limits: BatchLimits) -> None:
    if sessions > limits.sessions:
        raise BodyRejected(
            413,
            f"line {number}: the batch holds more than {limits.sessions} sessions, the limit per request; "
            "send smaller batches",
        )
    if records > limits.records:
        raise BodyRejected(
            413,
            f"line {number}: the batch holds more than {limits.records} events and requests, the limit "
            "per request; send smaller batches",
        )


def _start_session(
    sessions: dict[str, PendingSession],
    value: dict[str, Any],
    number: int,
    path: str,
    errors: list[LineError],
) -> PendingSession | None:
    try:
        header = parse_header(value, BODY, number)
    except FormatError as error:
        errors.append(LineError(BODY, number, error.error.field, error.error.reason))
        return None
    pending = sessions.get(header.id)
    if pending is None:
        pending = sessions[header.id] = PendingSession(
            SessionImport(external_id=header.id, format=DSH_FORMAT, path=path, items=iter(()))
        )
    if not pending.has_header:
        imported = pending.imported
        imported.format = DSH_FORMAT
        imported.format_version = str(header.version)
        imported.title = header.title
        imported.cwd = header.cwd
        imported.started_at = header.created_at
        imported.parent_external_id = header.parent_session
        imported.lineage = "subagent" if header.delegation_depth > 0 else "main"
        pending.has_header = True
    return pending


def _add_events(pending: PendingSession, value: dict[str, Any], number: int, errors: list[LineError]) -> int:
    """Decode one event line into ``pending``; return how many events it held."""
    try:
        events = decode_record(value, number)
    except ValueError as bad:
        # The dsh decoder names the offending field on its error.
        errors.append(
            LineError(BODY, number, getattr(bad, "field", "line"), getattr(bad, "reason", str(bad)))
        )
        return 0
    imported = pending.imported
    for event in events:
        if not event.ignorable and not is_known_event_type(event.type) and not imported.unfoldable:
            imported.unfoldable = f"seq {event.seq}: unknown event type '{event.type}' without ignorable"
        if event.time is not None and (imported.ended_at is None or event.time > imported.ended_at):
            imported.ended_at = event.time
        pending.items.append(event)
    return len(events)


def _add_request(
    sessions: dict[str, PendingSession],
    current: PendingSession | None,
    value: dict[str, Any],
    number: int,
    path: str,
    errors: list[LineError],
) -> None:
    session_id = value.get("session")
    if session_id is None and current is not None:
        session_id = current.imported.external_id
    if not isinstance(session_id, str) or not session_id:
        errors.append(LineError(BODY, number, "session", "a request line needs the id of its session"))
        return
    try:
        exchange = parse_capture_record(value)
    except BadRecord as bad:
        errors.append(LineError(BODY, number, bad.field, bad.reason))
        return
    if exchange is None:
        return
    usage = None
    if exchange.raw_usage is not None:
        try:
            usage = normalize_usage(exchange.usage_shape, exchange.raw_usage)
        except UsageError as error:
            errors.append(LineError(BODY, number, f"usage.{error.field}", error.reason))
    lineage = value.get("lineage", exchange.lineage)
    if lineage not in LINEAGES:
        errors.append(
            LineError(BODY, number, "lineage", f"expected one of {', '.join(LINEAGES)}, got {lineage!r}")
        )
        return
    pending = sessions.get(session_id)
    if pending is None:
        capture = ANTHROPIC_FORMAT if exchange.api == "messages" else OPENAI_FORMAT
        pending = sessions[session_id] = PendingSession(
            SessionImport(external_id=session_id, format=capture, path=path, items=iter(()))
        )
    imported = pending.imported
    if exchange.started_at is not None:
        if imported.started_at is None or exchange.started_at < imported.started_at:
            imported.started_at = exchange.started_at
        if imported.ended_at is None or exchange.started_at > imported.ended_at:
            imported.ended_at = exchange.started_at
    key = exchange.key or _line_key(value)
    pending.items.append(
        exchange.record(key=key, ordinal=len(pending.items), usage=usage, line=number, lineage=lineage)
    )


def _line_key(value: dict[str, Any]) -> str:
    """A stable key for a call whose response carries no id: the digest of the line's content."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "line-sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:40]
