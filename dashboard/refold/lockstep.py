"""Folding several projections over one stream of a session's events in lockstep, each from its own
state, and the track that holds each projection's state as it goes; shared by the incremental fold,
re-fold runs, the host projection check and the context chart."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from itertools import tee
from typing import Any

from dashboard.models import ProjectionRow
from projections.folds.fold import FoldStep
from projections.folds.registry import AnyProjection, FoldError, fold_views, state_size_bytes
from projections.normalized import JSON, EventRecord


@dataclass
class Track:
    """One projection being folded over a session's events, from a state at ``seq`` (``None``: the start)."""

    projection: AnyProjection
    state: Any
    seq: int | None = None
    view: Any = None
    error: FoldError | None = None
    folded: int = 0
    """Events folded by this run of the track (not counting those its starting state held)."""

    @classmethod
    def start(cls, projection: AnyProjection) -> Track:
        return cls(projection, projection.init())

    @classmethod
    def resume(cls, projection: AnyProjection, row: ProjectionRow) -> Track:
        state = projection.deserialize(row.val)
        return cls(projection, state, row.seq, projection.view(state))

    @property
    def key(self) -> str:
        return self.projection.key

    @property
    def ver(self) -> int:
        return self.projection.state_version

    @property
    def view_json(self) -> JSON:
        return None if self.seq is None else self.projection.view_json(self.view)

    def state_bytes(self) -> int:
        return state_size_bytes(self.projection, self.state)


def fold_tracks(
    tracks: list[Track], events: Iterable[EventRecord]
) -> Generator[tuple[EventRecord, list[FoldStep[Any, Any] | None]], None, None]:
    """Fold every track over ``events`` in lockstep, yielding each event with each track's step.

    A track's step is ``None`` when the track does not take the event (its state already holds it,
    or it has stopped at an error). A :class:`FoldError` stops its own track only, at the last good
    state; the others go on. Events are read once, whatever the number of tracks.
    """
    if not tracks:
        return
    try:
        yield from _lockstep(tracks, events)
    finally:
        # A stream from the database holds a cursor until it is closed, even when a fold stopped early.
        close = getattr(events, "close", None)
        if close is not None:
            close()


def _lockstep(
    tracks: list[Track], events: Iterable[EventRecord]
) -> Iterator[tuple[EventRecord, list[FoldStep[Any, Any] | None]]]:
    raw, *branches = tee(events, len(tracks) + 1)
    folds = [
        fold_views(track.projection, branch, track.state, track.seq)
        for track, branch in zip(tracks, branches, strict=True)
    ]
    live = [True] * len(tracks)
    for event in raw:
        steps: list[FoldStep[Any, Any] | None] = []
        for index, track in enumerate(tracks):
            if not live[index] or (track.seq is not None and event.seq <= track.seq):
                steps.append(None)
                continue
            try:
                step = next(folds[index])
            except FoldError as error:
                track.error = error
                live[index] = False
                # Drop the generator so the branch's buffered events can be freed.
                folds[index] = iter(())
                steps.append(None)
                continue
            track.state, track.seq, track.view = step.state, step.seq, step.view
            track.folded += 1
            steps.append(step)
        yield event, steps
        if not any(live):
            return


def drain(iterator: Iterator[Any]) -> None:
    """Run an iterator to its end for its side effects."""
    for _ in iterator:
        pass
