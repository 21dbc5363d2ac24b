"""Running a projection over a session's events, and storing or resuming its state as a row (DESIGN §5)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from projections.events import FoldError, current_spelling, fold_error, is_known_event_type
from projections.folds.projection import Projection
from projections.normalized import JSON, EventRecord
from projections.prices import PriceError

S = TypeVar("S")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class ProjectionRow:
    """A stored shortcut: the state of ``key`` under version ``ver`` after event ``seq``."""

    key: str
    ver: int
    seq: int
    val: JSON


@dataclass(frozen=True, slots=True)
class FoldStep(Generic[S, V]):
    """One event folded: its seq, the state after it and that state's view."""

    seq: int
    state: S
    view: V


def apply_event(projection: Projection[S, V], state: S, event: EventRecord) -> S:
    """One ``apply``, after the checks every projection shares.

    An unknown type marked ``ignorable`` is skipped (the state is returned unchanged); an unknown
    type without it stops the fold. An older spelling of a type (``compact/*``) reaches the
    projection as the type it is spelled as today.
    """
    if not is_known_event_type(event.type):
        if event.ignorable:
            return state
        raise fold_error(event, "unknown-event-type", "the type is unknown and the event is not ignorable")
    try:
        return projection.apply(state, current_spelling(event))
    except PriceError as error:
        raise fold_error(event, "unpriceable-message", str(error)) from None


def fold(
    projection: Projection[S, V],
    events: Iterable[EventRecord],
    state: S | None = None,
    after_seq: int | None = None,
) -> S:
    """The state after folding ``events`` into ``state`` (the initial state by default).

    ``after_seq`` is the seq of the last event already in ``state``: earlier events are skipped.
    Seqs must strictly increase; a gap between them is no error (see
    :mod:`projections.formats.dsh.seqs` for why the harness's logs may have one).
    """
    current = projection.init() if state is None else state
    for event in _increasing(events, after_seq):
        current = apply_event(projection, current, event)
    return current


def fold_views(
    projection: Projection[S, V],
    events: Iterable[EventRecord],
    state: S | None = None,
    after_seq: int | None = None,
) -> Iterator[FoldStep[S, V]]:
    """Fold like :func:`fold`, yielding the state and view after every event (for re-fold comparison)."""
    current = projection.init() if state is None else state
    for event in _increasing(events, after_seq):
        current = apply_event(projection, current, event)
        yield FoldStep(event.seq, current, projection.view(current))


def to_row(projection: Projection[S, V], state: S, seq: int) -> ProjectionRow:
    """The row that stores ``state``, the state after event ``seq``."""
    return ProjectionRow(projection.key, projection.state_version, seq, projection.serialize(state))


def resume(
    projection: Projection[S, V], row: ProjectionRow | None, events: Iterable[EventRecord]
) -> tuple[S, int | None]:
    """The state after ``events`` and its last seq, starting from ``row`` when it is usable.

    Rows are shortcuts, never authority: a row of another key or state version is ignored and the
    log is folded from the start. ``events`` may be the whole log; events the row already holds are
    skipped, so each new event costs one ``apply``.
    """
    usable = row is not None and row.key == projection.key and row.ver == projection.state_version
    state = projection.deserialize(row.val) if usable and row is not None else projection.init()
    last = row.seq if usable and row is not None else None
    for event in _increasing(events, last):
        state = apply_event(projection, state, event)
        last = event.seq
    return state, last


def state_size_bytes(projection: Projection[S, V], state: S) -> int:
    """The size of ``state`` as stored: bytes of its compact JSON, to compare versions' retained state."""
    text = json.dumps(projection.serialize(state), separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def _increasing(events: Iterable[EventRecord], after_seq: int | None) -> Iterator[EventRecord]:
    previous = after_seq
    for event in events:
        if after_seq is not None and event.seq <= after_seq:
            continue
        if previous is not None and event.seq <= previous:
            detail = f"seq {event.seq} after seq {previous}: seqs must strictly increase"
            raise FoldError(event.seq, event.type, "seq-order", detail)
        previous = event.seq
        yield event
