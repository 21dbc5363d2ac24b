"""A session's context over time, for its page: system prompt, tool schemas and messages after every
event, the provider's reported prompt and the model's window, and a marker for every compaction and
prune.

The figures come from the engine: the ``contextBreakdown`` fold of the stored log, and each stored
request's own figures (priced from its body at ingest, :mod:`projections.context_series`), so a
claude-trace or capture session shows its requests' system and tools (calibrated to the provider's
count, the raw estimate kept), a usage-only transcript shows the rest of the provider's prompt as
an inferred band, and a folded log keeps its own figures, with the gap named where they fall far
short of the provider's count. A long session's series is cached
until its log grows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache

from dashboard.models import Request, Session, SessionAnalysis
from dashboard.models.requests import current_lineage
from dashboard.refold.folds import session_records
from dashboard.refold.lockstep import Track, fold_tracks
from projections.breakdown_calibration import ContextShortfall, context_shortfall
from projections.cache.predict.lineage import is_side_call
from projections.context_series import Basis, ContextRow, RequestFigures, context_rows
from projections.events import METERING_TYPES, current_spelling
from projections.folds.registry import get_projection
from projections.normalized import JSON, EventRecord
from projections.providers.model_windows import auto_compact_rule, host_of_format
from projections.request_breakdown import RequestBreakdown


@dataclass(frozen=True)
class BreakdownPoint:
    """The context after one event.

    ``system`` and ``tools`` are ``None`` where the log cannot tell them apart; ``inferred`` then holds
    both together, inferred from the provider's prompt. ``provider`` is the prompt the provider
    reported for the call this event answers (``None`` elsewhere).
    """

    seq: int
    time: datetime | None
    system: int | None
    tools: int | None
    messages: int
    inferred: int | None
    provider: int | None
    window: int | None
    raw: int | None = None
    """The raw heuristic estimate of the whole prompt, where the bands were calibrated from it."""
    calibration: str | None = None
    """How the bands were sized: ``provider count``, ``session factor``; ``None`` as estimated."""

    @property
    def used(self) -> int:
        """Everything in the context: the stacked total."""
        return (self.system or 0) + (self.tools or 0) + self.messages + (self.inferred or 0)


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
    """The context over a session, from its stored log and requests."""

    breakdown_version: int
    points: list[BreakdownPoint] = field(default_factory=list)
    markers: list[ReplacementMarker] = field(default_factory=list)
    error: str = ""
    events: int = 0
    basis: Basis | None = None
    """Where the figures come from: ``request body``, ``log`` or ``usage``; ``None`` with no points."""
    auto_compact: int | None = None
    """Where the host compacts on its own for the current window, when the host does."""
    first_inferred: int | None = None
    """The inferred band at the session's first call, where the messages it absorbs are fewest: the
    closest the band comes to the system prompt and tools alone."""
    shortfall: ContextShortfall | None = None
    """Where a folded log's figures fall far short of the provider's count at its last call."""
    times: dict[int, datetime | None] = field(default_factory=dict, repr=False)
    """Event times while folding (emptied as points are made)."""

    @property
    def now(self) -> BreakdownPoint | None:
        return self.points[-1] if self.points else None

    @property
    def last_provider(self) -> int | None:
        """The newest prompt the provider reported."""
        return next((p.provider for p in reversed(self.points) if p.provider is not None), None)

    @property
    def can_tell(self) -> bool:
        """Whether the log says anything about the context (a log of only bookkeeping events does not)."""
        return any(point.used or point.provider for point in self.points)


SERIES_CACHE_SECONDS = 3600


def session_breakdown_series_cached(*, session: Session) -> BreakdownSeries:
    """:func:`session_breakdown_series`, kept in the cache until the log grows.

    A log only grows, so its event and request counts and the live state version name one series; a
    long session's page then folds its log once, not on every view.
    """
    key = series_cache_key(session)
    series: BreakdownSeries | None = cache.get(key)
    if series is None:
        series = session_breakdown_series(session=session)
        cache.set(key, series, SERIES_CACHE_SECONDS)
    return series


def series_cache_key(session: Session) -> str:
    """The cache key of a session's series: it names the log's length, the live state version and
    the analysis stored (which decides which requests are side calls the chart leaves out)."""
    version = get_projection("contextBreakdown").state_version
    born = session.created_at.timestamp() if session.created_at else 0
    analysed = (
        SessionAnalysis.objects.filter(session=session).values_list("stored_generation", flat=True).first()
    )
    return (
        f"breakdown-series:{session.pk}:{born}:{session.event_count}:{session.request_count}:{version}:"
        f"{bool(session.unfoldable)}:{analysed}"
    )


def session_breakdown_series(*, session: Session) -> BreakdownSeries:
    """Fold one session's log under the live ``contextBreakdown``, join its requests' figures, and keep
    a point whenever a figure changes (and the last one), plus a marker for every compaction and prune.

    Side calls (a title, a quota probe: the ``side``, ``side-2``, ... lineages of the analysis, or
    the importer's ``side`` before it ran) are left out: the chart follows the main chain's context.
    """
    breakdown = Track.start(get_projection("contextBreakdown"))
    series = BreakdownSeries(breakdown.ver)
    if session.unfoldable:
        series.error = f"The log cannot be folded: {session.unfoldable}"
        return series
    steps = _fold_steps(breakdown, session, series)
    last: tuple[int | None, ...] | None = None
    pending: BreakdownPoint | None = None
    host = host_of_format(session.format)
    for row in context_rows(steps, session_request_figures(session=session), host=host):
        series.events += 1
        if is_side_call(row.lineage):
            continue
        series.basis = row.basis
        point = _point(row, series.times.pop(row.seq, None))
        if series.first_inferred is None:
            series.first_inferred = point.inferred
        figures = (
            point.system,
            point.tools,
            point.messages,
            point.inferred,
            point.provider,
            point.window,
            point.raw,
        )
        if figures != last or point.provider is not None:
            series.points.append(point)
            last, pending = figures, None
        else:
            pending = point
    if pending is not None:
        series.points.append(pending)
    series.times.clear()
    if breakdown.error is not None:
        series.error = str(breakdown.error.with_session(session.external_id))
    if series.basis == "log":
        series.shortfall = _shortfall(series.points)
    rule = auto_compact_rule(session.format)
    window = series.now.window if series.now is not None else None
    if rule is not None and window:
        series.auto_compact = rule.threshold(window)
    return series


def _fold_steps(
    breakdown: Track, session: Session, series: BreakdownSeries
) -> Iterator[tuple[EventRecord, JSON]]:
    """The log's events with the fold's view after each; compactions and prunes become markers."""
    for event, (step,) in fold_tracks([breakdown], session_records(session_id=session.pk)):
        # Older logs spell compaction ``compact/*``: read both, as the folds do.
        spelled = current_spelling(event)
        if spelled.type in METERING_TYPES:
            series.markers.append(_marker(spelled))
        if step is None:
            continue
        series.times[event.seq] = event.time
        yield event, breakdown.projection.view_json(step.view)


def session_request_figures(*, session: Session) -> dict[int, RequestFigures]:
    """The session's requests' figures by the seq of the event that answers each (one query)."""
    rows = (
        Request.objects.filter(session=session, event_seq__isnull=False)
        .order_by("ordinal")
        .values_list(
            "event_seq",
            "model",
            current_lineage(),
            "system_tokens",
            "tools_tokens",
            "message_tokens",
            "uncached_input_tokens",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "context_window",
        )
    )
    figures: dict[int, RequestFigures] = {}
    for seq, model, lineage, system, tools, messages, uncached, read, write_5m, write_1h, window in rows:
        measured = None
        if system is not None and tools is not None and messages is not None:
            measured = RequestBreakdown(system, tools, messages)
        buckets = (uncached, read, write_5m, write_1h)
        prompt = None if all(b is None for b in buckets) else sum(b or 0 for b in buckets)
        figures[seq] = RequestFigures(model, lineage, measured, prompt, window)
    return figures


def _shortfall(points: list[BreakdownPoint]) -> ContextShortfall | None:
    """The gap between a folded log's figures and the provider's count at the last call of the main
    chain, when it is far (the figures at the call's answering event, which already hold its reply:
    a gap there is at least as wide as the call's)."""
    last = next((p for p in reversed(points) if p.provider is not None), None)
    return None if last is None else context_shortfall(last.used, last.provider)


def _point(row: ContextRow, time: datetime | None) -> BreakdownPoint:
    return BreakdownPoint(
        seq=row.seq,
        time=time,
        system=row.system_tokens,
        tools=row.tools_tokens,
        messages=row.message_tokens,
        inferred=row.inferred_tokens,
        provider=row.provider_prompt_tokens,
        window=row.context_window,
        raw=row.raw.total if row.raw is not None else None,
        calibration=row.calibration,
    )


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
