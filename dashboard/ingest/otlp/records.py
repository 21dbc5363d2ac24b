"""The OTLP receiver's use case: an export request's records → usage-only sessions, stored as the
ingestion API stores its sessions.

Log records are read as Claude Code's telemetry events (:mod:`projections.formats.otel.claude_code`),
spans as GenAI calls (:mod:`projections.formats.otel.genai`); both become :class:`SessionImport`
objects of request records, stored by :func:`~dashboard.ingest.api.lines.pending_store`, the
ingestion API's own path: one transaction, a savepoint per session, requests keyed per session so an
exporter's retry adds nothing, follow-up folds and analyses enqueued on commit. The ingestion API's
limits hold (records and sessions per request: 413, nothing stored); a record that cannot be read is
rejected alone and named, by its position in the request, in the answer's ``partial_success``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Max

from dashboard.ingest.api.body import BodyRejected
from dashboard.ingest.api.lines import BatchLimits, PendingSession, pending_store
from dashboard.ingest.files import IngestSummary
from dashboard.ingest.otlp.body import Signal
from dashboard.models import Event, Session, Source
from dashboard.storage.db_retry import retrying
from projections.formats.otel.claude_code import claude_code_sessions
from projections.formats.otel.genai import genai_sessions
from projections.formats.otel.otlp import TelemetrySession, log_records, record_count, spans
from projections.normalized import EventRecord, LineError, LineNotice

MAX_NAMED_REJECTIONS = 20
"""Rejected records named one by one in the answer; the rest are counted."""
RECORD_NAMES = {"logs": "log record", "traces": "span", "metrics": "data point"}


@dataclass
class OtlpIngestResult:
    """What one export request stored and what it rejected."""

    signal: Signal
    received: int
    summary: IngestSummary = field(default_factory=IngestSummary)
    rejected: list[LineError] = field(default_factory=list)
    """One per rejected record, ``line`` its position in the request."""
    notices: list[LineNotice] = field(default_factory=list)

    @property
    def analysis_pending(self) -> bool:
        return bool(self.summary.followups_pending)

    def message(self) -> str:
        """The ``partial_success.error_message``: each rejected record by position and why, then notices."""
        parts = [
            f"{RECORD_NAMES[self.signal]} {e.line}: {e.field}: {e.reason}"
            for e in sorted(self.rejected, key=lambda e: e.line or 0)[:MAX_NAMED_REJECTIONS]
        ]
        if len(self.rejected) > MAX_NAMED_REJECTIONS:
            parts.append(f"and {len(self.rejected) - MAX_NAMED_REJECTIONS} more")
        notes = [f"{RECORD_NAMES[self.signal]} {n.line}: {n.field}: {n.reason}" for n in self.notices]
        text = "; ".join(parts)
        if text:
            text = f"{len(self.rejected)} of {self.received} {RECORD_NAMES[self.signal]}s rejected: {text}"
        return "; ".join([text, *notes[:MAX_NAMED_REJECTIONS]]) if notes else text


def otlp_ingest(
    *, request: dict[str, Any], signal: Signal, source: Source, limits: BatchLimits | None = None
) -> OtlpIngestResult:
    """Store the calls of an OTLP ``request`` (logs or traces, as an OTLP/JSON dict) for ``source``.

    Raises :class:`BodyRejected` (413) when it holds more records or sessions than ``limits`` (the
    ingestion API's, from the settings, by default); nothing is stored then.
    """
    limits = limits or BatchLimits.from_settings()
    path = f"/v1/{signal}"
    result = OtlpIngestResult(signal=signal, received=record_count(request, signal))
    if result.received > limits.records:
        raise BodyRejected(
            413,
            f"the request holds {result.received} {RECORD_NAMES[signal]}s, more than {limits.records}, "
            "the limit per request; export smaller batches",
        )
    if signal == "logs":
        sessions = claude_code_sessions(log_records(request, result.rejected, path), path, result.rejected)
    else:
        sessions = genai_sessions(
            spans(request, result.rejected, path), path, result.rejected, result.notices
        )
    if len(sessions) > limits.sessions:
        raise BodyRejected(
            413,
            f"the request holds {len(sessions)} sessions, more than {limits.sessions}, the limit per "
            "request; export smaller batches",
        )
    # In the order of their ids, as the ingestion API writes them, so batches cannot deadlock.
    sessions.sort(key=lambda s: s.imported.external_id)
    by_path: dict[str, TelemetrySession] = {}
    for session in sessions:
        # A path per session, so a session the store refuses is told apart in the summary's errors.
        session.imported.path = f"{path} session {session.imported.external_id}"[:1000]
        by_path[session.imported.path] = session
    pending = [PendingSession(s.imported, [*_compaction_events(s, source), *s.records]) for s in sessions]
    result.summary = retrying(lambda: pending_store(pending, source))
    for error in result.summary.errors:
        refused = by_path.get(error.path) if error.line is None else None
        if refused is None:
            result.rejected.append(LineError(path, error.line, error.field, error.reason))
            continue
        result.rejected.extend(LineError(path, p, error.field, error.reason) for p in refused.positions)
    result.notices.extend(result.summary.notices)
    return result


def _compaction_events(session: TelemetrySession, source: Source) -> list[EventRecord]:
    """The ``compaction/start`` and ``compaction/end`` events of the compactions not stored yet,
    numbered after the session's stored log, so a retried export adds none and the log stays
    contiguous. (Two exports of one session's compactions at the same moment could number theirs
    alike; the store then keeps the first and counts the other a duplicate. An exporter sends one
    session's batches one after the other.)"""
    if not session.compactions:
        return []
    stored = Session.objects.filter(source=source, external_id=session.imported.external_id[:200]).first()
    known: set[str] = set()
    next_seq = 0
    if stored is not None:
        starts = Event.objects.filter(session=stored, type="compaction/start")
        known = {str(data.get("compactionId")) for data in starts.values_list("data", flat=True)}
        last = Event.objects.filter(session=stored).aggregate(last=Max("seq"))["last"]
        next_seq = 0 if last is None else last + 1
    events: list[EventRecord] = []
    for compaction in sorted(session.compactions, key=lambda c: c.started_at):
        if compaction.key in known:
            continue
        known.add(compaction.key)
        data = {"compactionId": compaction.key, "turn": 0, "source": "telemetry"}
        events.append(EventRecord(next_seq, "compaction/start", compaction.started_at, data))
        events.append(EventRecord(next_seq + 1, "compaction/end", compaction.ended_at, data))
        next_seq += 2
    return events
