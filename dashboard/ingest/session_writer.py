"""Writing one imported session's events, requests and blocks, inside the caller's transaction.

Events are append-only and keyed by ``(session, seq)``, requests by ``(session, key)``, so a copy
of a log already stored adds nothing and a log that has grown adds only what is new; a repeated seq
is checked against the stored row rather than trusted. Rows are written in batches, bounded by their
count and by the units their bodies hold, so a session's memory stays flat however long its log.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from dashboard.fleet.rollups import hour_of
from dashboard.ingest.blocks import BlockStore
from dashboard.ingest.event_writer import EventWriter
from dashboard.ingest.request_rows import request_row
from dashboard.ingest.summary import IngestSummary
from dashboard.models import Event, ProjectionRow, Request, Session, Source
from dashboard.sessions.summaries import RequestSums, session_refresh_summary
from dashboard.storage.copy_rows import insert_rows
from projections.context_series import answering_seq
from projections.normalized import (
    EventRecord,
    LineError,
    LineNotice,
    RequestRecord,
    SessionImport,
    SessionItem,
)

BATCH_SIZE = 2000
REQUEST_UNITS_BATCH = 5_000
"""Queued requests are written once their bodies' units reach this many: a session whose every call
resends the whole conversation has thousands of units per request, and a count of requests alone
would hold hundreds of megabytes of them."""


@dataclass
class WrittenSession:
    """A session as :func:`write_session` left it."""

    session: Session
    new_hours: set[datetime] | None
    """For a session this transaction created, the hours its timed requests fall in, which are all
    the hours it has; ``None`` for one stored before, whose hours are read from its rows."""


LEADING_ITEMS = 5
"""The events (or, for a log of calls alone, the requests) a copy must share with a stored session
of another source to be taken for it."""


def stored_under_another_source(imported: SessionImport, source: Source) -> Session | None:
    """The session of another source that already holds this log, or ``None``: one with the same
    external id whose first :data:`LEADING_ITEMS` events (or requests) are the import's own.

    A host that sends the same file as two sources (an upload under the wrong name, two exporters
    on one machine) would otherwise store the conversation twice and count it twice in the fleet.
    Reads the import's first items and puts them back, so the caller reads the import whole.
    """
    external_id = imported.external_id[:200]
    if Session.objects.filter(source=source, external_id=external_id).exists():
        return None  # stored here already: an ingest of it here adds to it as always
    candidates = list(Session.objects.filter(external_id=external_id).exclude(source=source))
    if not candidates:
        return None
    leading, imported.items = _peek(imported.items)
    events = [item for item in leading if isinstance(item, EventRecord)][:LEADING_ITEMS]
    keys = [item.key for item in leading if isinstance(item, RequestRecord)][:LEADING_ITEMS]
    for candidate in candidates:
        if events and _same_events(candidate, events):
            return candidate
        if not events and keys and _same_requests(candidate, keys):
            return candidate
    return None


def _peek(items: Iterator[SessionItem]) -> tuple[list[SessionItem], Iterator[SessionItem]]:
    """The items up to the :data:`LEADING_ITEMS`-th event or request, and the whole stream again."""
    leading: list[SessionItem] = []
    events = requests = 0
    for item in items:
        leading.append(item)
        events += isinstance(item, EventRecord)
        requests += isinstance(item, RequestRecord)
        if events >= LEADING_ITEMS or (not events and requests >= LEADING_ITEMS):
            break
    return leading, itertools.chain(leading, items)


def _same_events(session: Session, events: list[EventRecord]) -> bool:
    stored = list(
        Event.objects.filter(session=session, seq__in=[event.seq for event in events])
        .order_by("seq")
        .values_list("seq", "type", "data")
    )
    # Through JSON, as they were stored: a tuple read from a log is the list stored from it.
    own = [(event.seq, event.type, json.loads(json.dumps(event.data))) for event in events]
    return stored == own


def _same_requests(session: Session, keys: list[str]) -> bool:
    return Request.objects.filter(session=session, key__in=keys).count() == len(set(keys))


def write_session(
    imported: SessionImport, source: Source, summary: IngestSummary, blocks: BlockStore
) -> WrittenSession:
    # FOR NO KEY UPDATE (as every writer of a session locks it): two ingests of one session take
    # turns, while a row that only refers to the session (another batch's analysis request, its
    # foreign-key check) is not kept waiting, which could otherwise close a circle of waits.
    session, created = Session.objects.select_for_update(no_key=True).get_or_create(
        source=source,
        external_id=imported.external_id[:200],
        defaults=_session_fields(imported),
    )
    if not created:
        # Facts that only grow: a later copy of the log may know more (an end, a title).
        for name, value in _session_fields(imported).items():
            if value and not getattr(session, name):
                setattr(session, name, value)
    # Events are append-only: a seq at or below the stored maximum is most likely a repeat, and is
    # checked against the stored row in batches rather than by loading the whole log's seqs. A
    # session created by this transaction, which holds its row, has nothing stored yet to ask about.
    last_seq = None if created else Event.objects.filter(session=session).aggregate(last=Max("seq"))["last"]
    events = EventWriter(session.pk, batch_size=BATCH_SIZE)
    repeats = RepeatedEvents(session, imported.path, events, summary)
    stored_keys: dict[str, tuple[int | None, ...]] = (
        {}
        if created
        else {
            key: tuple(usage)
            for key, *usage in Request.objects.filter(session=session).values_list(
                "key", *_PROMPT_COLUMNS, "output_tokens"
            )
        }
    )
    completed = 0
    next_ordinal = len(stored_keys)
    requests: list[Request] = []
    pending_units = 0
    added_requests = 0
    written = RequestSums()
    hours: set[datetime] = set()

    previous: EventRecord | None = None
    stored_last = last_seq
    read_last: int | None = None
    for item in imported.items:
        if isinstance(item, EventRecord):
            previous = item
            read_last = item.seq if read_last is None else max(read_last, item.seq)
            if last_seq is not None and item.seq <= last_seq:
                repeats.add(item)
            else:
                events.add(item)
                # A seq of this import seen again (a batch that repeats a line) is a repeat too.
                last_seq = item.seq
        elif isinstance(item, RequestRecord):
            if item.key in stored_keys:
                summary.duplicate_requests += 1
                completed += _complete_request(session, item, stored_keys)
                continue
            stored_keys[item.key] = ()
            row = request_row(session, item, next_ordinal, blocks, imported.path, summary.errors)
            session.client_version = item.client_version or session.client_version
            row.event_seq = answering_seq(previous)
            requests.append(row)
            written.add(row)
            if row.started_at is not None:
                hours.add(hour_of(row.started_at))
            next_ordinal += 1
            pending_units += len(row.units or ())
            if len(requests) >= BATCH_SIZE // 10 or pending_units >= REQUEST_UNITS_BATCH:
                blocks.flush()
                added_requests += _flush_requests(requests)
                pending_units = 0
        elif isinstance(item, LineNotice):
            summary.notices.append(item)
        else:
            summary.errors.append(item)

    blocks.flush()
    repeats.resolve()
    added_events = events.flush()
    added_requests += _flush_requests(requests)
    if created or added_events:
        # Only a change to the stored log can change whether it folds; a bad copy that added nothing
        # (a gap or an unknown type in a re-sent file) leaves the stored log as foldable as it was.
        session.unfoldable = imported.unfoldable or imported.fatal or session.unfoldable
    _crash_tail_update(
        session,
        imported,
        summary,
        read_through=stored_last is None or (read_last is not None and read_last >= stored_last),
    )
    # A title the log gives as it is read (a transcript's summary line, the harness's session/title)
    # is known only now; a log that grew may have been named since, so its newest copy names it.
    title = imported.title[:300]
    if title and (not session.title or added_events or added_requests):
        session.title = title
    if imported.ended_at and (session.ended_at is None or imported.ended_at > session.ended_at):
        session.ended_at = imported.ended_at
    session_refresh_summary(
        session,
        events_added=added_events,
        event_times=events.time_range,
        new_requests=written if created else None,
    )

    summary.events_added += added_events
    summary.requests_added += added_requests
    summary.requests_completed += completed
    if created:
        summary.sessions_added += 1
    elif added_events or added_requests or completed:
        summary.sessions_updated += 1
    else:
        summary.sessions_unchanged += 1
    return WrittenSession(session, hours if created else None)


class RepeatedEvents:
    """Events of an import whose seq is already within the stored log.

    Each is checked against the stored row: the same type is a duplicate and skipped; another
    type is reported and the stored log kept; a seq the log lacks (a hole left by a bad line
    earlier, or a gap an earlier batch left) is written now, and the projection rows folded past it
    are discarded, since a fold goes on over a gap and their states lack the event.
    """

    def __init__(self, session: Session, path: str, writer: EventWriter, summary: IngestSummary) -> None:
        self.session = session
        self.path = path
        self.writer = writer
        self.summary = summary
        self.pending: dict[int, EventRecord] = {}

    def add(self, event: EventRecord) -> None:
        if event.seq in self.pending:
            self.summary.duplicate_events += 1
            return
        self.pending[event.seq] = event
        if len(self.pending) >= BATCH_SIZE:
            self.resolve()

    def resolve(self) -> None:
        if not self.pending:
            return
        # A repeat may be of an event this import queued but has not written yet.
        self.writer.flush()
        stored = dict(
            Event.objects.filter(session=self.session, seq__in=list(self.pending)).values_list("seq", "type")
        )
        filled: list[int] = []
        for seq, event in self.pending.items():
            if seq not in stored:
                self.writer.add(event)
                filled.append(seq)
                continue
            self.summary.duplicate_events += 1
            if stored[seq] != event.type:
                reason = (
                    f"seq {seq} is stored as {stored[seq]!r} but the file has {event.type!r} here; "
                    "the stored log is kept"
                )
                self.summary.errors.append(LineError(self.path, event.line, "seq", reason))
        if filled:
            ProjectionRow.objects.filter(session=self.session, seq__gte=min(filled)).delete()
        self.pending.clear()


def _crash_tail_update(
    session: Session, imported: SessionImport, summary: IngestSummary, *, read_through: bool
) -> None:
    """Note a cut last record (held back, not stored) on the ingest and the session; clear the
    session's note once a copy that reads through its stored end has none (the line was finished).

    A cut last line is what a crash or a copy taken mid-write leaves; it was dropped while the
    summary said "0 errors, 0 notices", and its note stayed on the session after the file was whole.
    """
    if imported.crash_tail:
        reason = f"{imported.crash_tail}: held back, not stored; ingest the file again once it is complete"
        summary.notices.append(LineNotice(imported.path, None, "crash tail", reason))
        session.crash_tail = imported.crash_tail
    elif read_through:
        session.crash_tail = ""


def _session_fields(imported: SessionImport) -> dict[str, object]:
    return {
        "format": imported.format,
        "format_version": imported.format_version,
        "title": imported.title[:300],
        "cwd": imported.cwd[:500],
        "started_at": imported.started_at,
        "ended_at": imported.ended_at,
        "parent_external_id": (imported.parent_external_id or "")[:200],
        "lineage": imported.lineage,
        "source_path": imported.path[-1000:],
        "labels": dict(imported.labels),
    }


_PROMPT_COLUMNS = (
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
)


def _complete_request(
    session: Session, item: RequestRecord, stored: dict[str, tuple[int | None, ...]]
) -> int:
    """Complete a stored request whose call was still being written when it was stored: a transcript
    gives a call's partial output count on its first line and the final one on its last, while its
    prompt buckets stay those stored. 1 when the stored row took the larger count, else 0."""
    usage = item.usage
    known = stored[item.key]
    if usage is None or usage.output is None or len(known) != len(_PROMPT_COLUMNS) + 1:
        return 0
    prompt = (usage.uncached_input, usage.cache_read, usage.cache_write_5m, usage.cache_write_1h)
    if prompt != known[:-1] or (known[-1] is not None and usage.output <= known[-1]):
        return 0
    Request.objects.filter(session=session, key=item.key).update(
        output_tokens=usage.output, usage_raw=dict(usage.raw)
    )
    stored[item.key] = (*prompt, usage.output)
    return 1


def _flush_requests(rows: list[Request]) -> int:
    count = len(rows)
    if rows:
        insert_rows(Request, rows)
        rows.clear()
    return count
