"""A session's context breakdown over time, for its page: a point whenever ``contextBreakdown`` or
``contextPressure`` changes and a marker for every compaction and prune, folded from the stored log.

The figures come from the folds themselves (:mod:`dashboard.services.folds` drives them); nothing
here re-states a rule. A long session's series is cached until its log grows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache

from dashboard.models import Session
from dashboard.services.folds import Track, fold_tracks, session_records
from projections.folds.registry import get_projection
from projections.normalized import JSON, EventRecord


@dataclass(frozen=True)
class BreakdownPoint:
    """The breakdown and the provider's figures after one event."""

    seq: int
    time: datetime | None
    system: int
    messages: int
    pressure: int | None
    window: int | None


@dataclass(frozen=True)
class ReplacementMarker:
    """A compaction or prune on the chart, with what its metering event states."""

    seq: int
    time: datetime | None
    kind: str
    shadowed_start: int | None
    shadowed_end: int | None
    shadowed_tokens: int | None
    usage: JSON


@dataclass
class BreakdownSeries:
    """``contextBreakdown`` and ``contextPressure`` over a session, from folding its stored log."""

    breakdown_version: int
    points: list[BreakdownPoint] = field(default_factory=list)
    markers: list[ReplacementMarker] = field(default_factory=list)
    error: str = ""
    events: int = 0

    @property
    def now(self) -> BreakdownPoint | None:
        return self.points[-1] if self.points else None


SERIES_CACHE_SECONDS = 3600


def session_breakdown_series_cached(*, session: Session) -> BreakdownSeries:
    """:func:`session_breakdown_series`, kept in the cache until the log grows.

    A log only grows, so its event count and the live state version name one series; a long
    session's page then folds its log once, not on every view.
    """
    version = get_projection("contextBreakdown").state_version
    born = session.created_at.timestamp() if session.created_at else 0
    key = f"breakdown-series:{session.pk}:{born}:{session.event_count}:{version}:{bool(session.unfoldable)}"
    series: BreakdownSeries | None = cache.get(key)
    if series is None:
        series = session_breakdown_series(session=session)
        cache.set(key, series, SERIES_CACHE_SECONDS)
    return series


def session_breakdown_series(*, session: Session) -> BreakdownSeries:
    """Fold one session's log under the live ``contextBreakdown`` and ``contextPressure``, keeping a point
    whenever a figure changes (and the last one), plus a marker for every compaction and prune.

    The figures come from the folds themselves; nothing here re-states a rule.
    """
    breakdown = Track.start(get_projection("contextBreakdown"))
    pressure = Track.start(get_projection("contextPressure"))
    series = BreakdownSeries(breakdown.ver)
    if session.unfoldable:
        series.error = f"The log cannot be folded: {session.unfoldable}"
        return series
    last: tuple[int, int, int | None, int | None] | None = None
    pending: BreakdownPoint | None = None
    for event, (step, _pressure_step) in fold_tracks(
        [breakdown, pressure], session_records(session_id=session.pk)
    ):
        if event.type in ("compaction/summary", "compaction/prune"):
            series.markers.append(_marker(event))
        if step is None:
            continue
        series.events += 1
        view = step.view
        pressure_view = pressure.view
        figures = (
            view.system_tokens,
            view.message_tokens,
            None if pressure_view is None else pressure_view.pressure,
            None if pressure_view is None else pressure_view.context_window,
        )
        point = BreakdownPoint(event.seq, event.time, *figures)
        if figures != last:
            series.points.append(point)
            last, pending = figures, None
        else:
            pending = point
    if pending is not None:
        series.points.append(pending)
    error = breakdown.error or pressure.error
    if error is not None:
        series.error = str(error.with_session(session.external_id))
    return series


def _marker(event: EventRecord) -> ReplacementMarker:
    data = event.data
    found = data.get("shadowedRange")
    shadowed: dict[str, JSON] = found if isinstance(found, dict) else {}
    tokens = data.get("shadowedTokenCount")
    return ReplacementMarker(
        seq=event.seq,
        time=event.time,
        kind="compaction" if event.type == "compaction/summary" else "prune",
        shadowed_start=shadowed.get("start") if isinstance(shadowed.get("start"), int) else None,
        shadowed_end=shadowed.get("end") if isinstance(shadowed.get("end"), int) else None,
        shadowed_tokens=tokens if isinstance(tokens, int) else None,
        usage=data.get("usage"),
    )
