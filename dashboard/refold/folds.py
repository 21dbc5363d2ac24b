"""Incremental folds of the live projections into projection rows, and the fold loop other services share.

A session's rows are kept current by :func:`fold_session` after each ingest: it resumes every live
projection from its row, so a new event costs one ``apply`` per key. Rows of another state version
than the live one are discarded and that key is folded from the start; other keys keep theirs.

A fold error stops that key at the failing event: the row stays at the last good seq with the error
recorded on it, and a ``fold-error`` warning (one per key, version and seq, with a count) names the
session, seq, event type and rule. Nothing is half-written: each session's rows and warnings are
written in one transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import OperationalError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast

from dashboard.analysis.session_warnings import session_warn, sessions_refresh_warning_count
from dashboard.models import Event, ProjectionRow, Session, Warning
from dashboard.refold.lockstep import Track, drain, fold_tracks
from projections.folds.registry import (
    FoldError,
    live_projections,
    live_versions,
)
from projections.normalized import EventRecord

EVENT_CHUNK = 2000


_JSON_COLUMNS = ("data", "surface_op", "source_event_seqs")


def session_records(*, session_id: int, after_seq: int | None = None) -> Iterator[EventRecord]:
    """The stored log of a session in seq order, streamed; only events after ``after_seq`` when given.

    Rows come as plain tuples with their JSON columns as text, decoded here by orjson: a model
    instance per event, or the JSON field's own per-value decoding, would cost more than folding it.
    They are read a page of ``EVENT_CHUNK`` at a time by seq, one query a page, rather than through
    a server-side cursor, which PostgreSQL declares, fetches from and closes in as many round trips
    for a log of a few dozen events, the common size.
    """
    events = (
        Event.objects.filter(session_id=session_id)
        .order_by("seq")
        .annotate(**{f"{name}_text": Cast(name, TextField()) for name in _JSON_COLUMNS})
        .values_list(
            "seq", "type", "time", "data_text", "surface_op_text", "source_event_seqs_text", "ignorable"
        )
    )
    loads = orjson.loads
    last = after_seq
    while True:
        page = list((events if last is None else events.filter(seq__gt=last))[:EVENT_CHUNK])
        for seq, type_, time, data, surface_op, seqs, ignorable in page:
            yield EventRecord(
                seq=seq,
                type=type_,
                time=time,
                data=loads(data),
                surface_op=loads(surface_op) if surface_op is not None else None,
                source_event_seqs=_seqs(loads(seqs)) if seqs is not None else None,
                ignorable=ignorable,
            )
        if len(page) < EVENT_CHUNK:
            return
        last = page[-1][0]


def _seqs(value: Any) -> tuple[int, ...] | None:
    # A JSON null stored in the column reads as text "null", as a SQL NULL reads as None.
    return None if value is None else tuple(value)


# --- fold errors -------------------------------------------------------------------------------------


def fold_error_place(key: str, ver: int, seq: int) -> str:
    """Where a fold error sits: one warning per key, state version and seq."""
    return f"{key} v{ver} seq {seq}"


def fold_error_message(error: FoldError, *, key: str, ver: int, session: str) -> str:
    """The warning text: the projection, then the session, seq, event type and rule of the error."""
    return f"{key} v{ver}: {error.with_session(session)}"


# --- incremental fold --------------------------------------------------------------------------------


@dataclass
class KeyFold:
    """What one fold did to one key of a session."""

    key: str
    ver: int
    seq: int | None
    folded: int
    discarded: int = 0
    error: str = ""


@dataclass
class SessionFold:
    """What :func:`fold_session` did to one session."""

    session_id: int
    keys: list[KeyFold] = field(default_factory=list)
    skipped: str = ""
    """Why nothing was folded (the session is gone or cannot be folded); empty when it was."""

    @property
    def events_folded(self) -> int:
        return sum(key.folded for key in self.keys)


def fold_session(*, session_id: int) -> SessionFold:
    """Bring every live projection row of a session up to its last stored event."""
    return fold_sessions(session_ids=[session_id])[0]


def fold_sessions(*, session_ids: Sequence[int]) -> list[SessionFold]:
    """Bring every live projection row of each session up to its last stored event, in order.

    The sessions and their rows are read in one query each, and each session is folded outside any
    transaction. The rows are then written under the sessions' locks, keeping whichever row is further
    along, so two folds of the same session never step back (see :func:`_fold_store`). A session
    whose fold fails is reported and the others are still folded; the first such error is raised at
    the end.
    """
    session_ids = list(dict.fromkeys(session_ids))
    sessions = Session.objects.filter(pk__in=session_ids).only("id", "external_id", "unfoldable")
    by_id = {session.pk: session for session in sessions}
    live_rows: dict[int, dict[str, ProjectionRow]] = defaultdict(dict)
    for row in ProjectionRow.objects.filter(_live_rows(), session_id__in=list(by_id)):
        live_rows[row.session_id][row.key] = row
    results: list[SessionFold] = []
    folded: list[Folded] = []
    failed: Exception | None = None
    for session_id in session_ids:
        session = by_id.get(session_id)
        result = SessionFold(session_id)
        results.append(result)
        if session is None:
            result.skipped = "the session no longer exists"
        elif session.unfoldable:
            result.skipped = f"the log cannot be folded: {session.unfoldable}"
        else:
            try:
                folded.append(Folded(session, _fold_tracks(session_id, live_rows[session_id]), result))
            except OperationalError:
                raise  # the database is away: the task's retry folds them all again
            except Exception as error:
                result.skipped = f"the fold failed: {type(error).__name__}: {error}"
                failed = failed or error
    _fold_store(folded)
    if failed is not None:
        raise failed
    return results


def _fold_tracks(session_id: int, rows: dict[str, ProjectionRow]) -> list[Track]:
    """Every live projection of a session folded from its row (or the start) to the last stored event."""
    tracks = [
        Track.resume(projection, rows[projection.key])
        if projection.key in rows and rows[projection.key].seq is not None
        else Track.start(projection)
        for projection in live_projections()
    ]
    # Read the log once, from the earliest seq any key still needs.
    after = None if any(track.seq is None for track in tracks) else min(track.seq or 0 for track in tracks)
    drain(fold_tracks(tracks, session_records(session_id=session_id, after_seq=after)))
    return tracks


@dataclass
class Folded:
    """A session folded by :func:`fold_sessions`, its tracks to write and the result to report."""

    session: Session
    tracks: list[Track]
    result: SessionFold


def _fold_store(folded: list[Folded]) -> None:
    """Write what :func:`fold_sessions` folded: the sessions nobody else is writing in one
    transaction, then each of the others in one of its own once it is free.

    The first transaction passes over a locked session rather than wait for it while holding the
    others' locks, and the ones after it hold one lock each: a fold never waits with locks held, so
    it cannot close a circle of waits with an ingest that holds several sessions at once.
    """
    with transaction.atomic():
        ids = [item.session.pk for item in folded]
        free = Session.objects.select_for_update(no_key=True, skip_locked=True).filter(pk__in=ids)
        unlocked = set(free.values_list("pk", flat=True))
        _fold_write([item for item in folded if item.session.pk in unlocked])
    for item in folded:
        if item.session.pk in unlocked:
            continue
        with transaction.atomic():
            if not Session.objects.select_for_update(no_key=True).filter(pk=item.session.pk).exists():
                item.result.skipped = "the session no longer exists"  # deleted while it was folded
                continue
            _fold_write([item])


def _fold_write(folded: list[Folded]) -> None:
    """Write the rows and errors of sessions whose locks the caller's transaction holds."""
    if not folded:
        return
    # Every row of the sessions at once, under the locks: the stale ones to discard, the live ones
    # to keep when a concurrent fold took them further.
    stored: dict[int, list[ProjectionRow]] = defaultdict(list)
    for row in ProjectionRow.objects.filter(session_id__in=[item.session.pk for item in folded]):
        stored[row.session_id].append(row)
    new: list[ProjectionRow] = []
    warned: list[int] = []
    for item in folded:
        session, result = item.session, item.result
        discarded = _discard_stale_rows(stored[session.pk])
        writes: list[tuple[Track, str]] = []
        for track in item.tracks:
            error = _fold_error_warn(session, track)
            if track.folded or error:
                writes.append((track, error))
            result.keys.append(
                KeyFold(track.key, track.ver, track.seq, track.folded, discarded.get(track.key, 0), error)
            )
        if any(key.error for key in result.keys):
            warned.append(session.pk)
        new.extend(_rows_to_write(session_id=session.pk, writes=writes, stored=stored[session.pk])[0])
    ProjectionRow.objects.bulk_create(new)
    if warned:
        # Only a fold error adds a warning here; a fold without one leaves the count as it was.
        sessions_refresh_warning_count(session_ids=warned)


def _fold_error_warn(session: Session, track: Track) -> str:
    """Record the fold error a track stopped at as a warning; its message, or "" for none."""
    if track.error is None:
        return ""
    error = fold_error_message(track.error, key=track.key, ver=track.ver, session=session.external_id)
    session_warn(
        session_id=session.pk,
        kind=Warning.Kind.FOLD_ERROR,
        place=fold_error_place(track.key, track.ver, track.error.seq),
        message=error,
        seq=track.error.seq,
    )
    return error


def _live_rows() -> Q:
    live = Q(pk__in=[])
    for key, ver in live_versions().items():
        live |= Q(key=key, ver=ver)
    return live


def _discard_stale_rows(stored: list[ProjectionRow]) -> dict[str, int]:
    """Delete the rows of any version but the live one, and drop them from ``stored``; a bumped key
    loses only its own rows."""
    live = live_versions()
    stale = [row for row in stored if live.get(row.key) != row.ver]
    counts: dict[str, int] = {}
    for row in stale:
        counts[row.key] = counts.get(row.key, 0) + 1
    if stale:
        ProjectionRow.objects.filter(pk__in=[row.pk for row in stale]).delete()
        stored[:] = [row for row in stored if live.get(row.key) == row.ver]
    return counts


def row_write(*, session_id: int, track: Track, error: str = "") -> bool:
    """Store a track's state as the session's row of its key and version, unless a further row exists.

    Rows are deterministic in the log up to their seq, so a stored row with a later seq is kept.
    Returns whether the row was written. Call inside a transaction that holds the session's lock.
    """
    stored = ProjectionRow.objects.filter(session_id=session_id, key=track.key, ver=track.ver).first()
    new, written = _rows_to_write(
        session_id=session_id, writes=[(track, error)], stored=[stored] if stored else []
    )
    ProjectionRow.objects.bulk_create(new)
    return bool(written)


def _rows_to_write(
    *, session_id: int, writes: Iterable[tuple[Track, str]], stored: Iterable[ProjectionRow]
) -> tuple[list[ProjectionRow], int]:
    """Save the ``stored`` rows (the session's, read under its lock) that the tracks, each with its
    error, take further; return the new rows, for the caller to insert (with other sessions' when it
    writes several), and how many rows are written in all."""
    rows = {(row.key, row.ver): row for row in stored}
    new: list[ProjectionRow] = []
    written = 0
    for track, error in writes:
        row = rows.get((track.key, track.ver))
        if row is not None and row.seq is not None:
            if track.seq is None or track.seq < row.seq:
                continue
            if track.seq == row.seq and row.error == error and not track.folded:
                continue
        values = {
            "seq": track.seq,
            "val": track.projection.serialize(track.state),
            "view": track.view_json,
            "state_bytes": track.state_bytes(),
            "error": error,
        }
        if row is None:
            new.append(ProjectionRow(session_id=session_id, key=track.key, ver=track.ver, **values))
        else:
            for name, value in values.items():
                setattr(row, name, value)
            row.save()
        written += 1
    return new, written
