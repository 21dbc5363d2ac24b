"""What the pages show of the stored what-if figures: a session's "What would fix this" panel and
the money a range of requests lost to misses.

Read from :class:`~dashboard.models.SessionSavings` and ``RequestAnalysis.miss_cost`` alone, so a
page view sums stored columns and never replays a session the figures of which are current.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum

from dashboard.fleet.cache_panels import in_window
from dashboard.fleet.usage import active_sessions
from dashboard.models import RequestAnalysis, ScenarioSaving, Session, SessionSavings
from dashboard.web.time_range import TimeWindow, range_limited
from projections.cache.whatif.scenarios import BEST

AS_RECORDED = "as-recorded"


@dataclass(frozen=True, slots=True)
class ScenarioShown:
    """One scenario as the panel lists it."""

    scenario: str
    supported: bool
    reason: str
    change: str
    saving: Decimal | None
    share: float | None
    """The saving as a share of the session's recorded cost."""
    touched: int | None
    requests: int
    combination: tuple[str, ...]
    touched_by_cause: tuple[TouchedCause, ...] = ()
    """The requests it sends otherwise, by their recorded miss cause."""


@dataclass(frozen=True, slots=True)
class TouchedCause:
    """Requests of one recorded miss cause that a scenario sends otherwise."""

    cause: str
    """The recorded miss label up to its position (``prefix-changed@system``); empty: no miss."""
    requests: int

    @property
    def label(self) -> str:
        """The label without its position, as the requests list filters by it."""
        return self.cause.split("@", 1)[0]


@dataclass(frozen=True, slots=True)
class FixPanel:
    """A session's scenarios: those the data supports, the most saved first, then the others with
    why they cannot be priced; ``error`` when the session has no figures at all."""

    supported: list[ScenarioShown]
    unsupported: list[ScenarioShown]
    recorded_cost: Decimal | None
    reported_cost: Decimal | None
    """The same requests priced from the usage the provider reported, the session's cost."""
    error: str

    @property
    def rules_error(self) -> Decimal | None:
        """How far the rules' cost as recorded is from the reported one (positive: above it); a
        saving, both sides by the same rules, does not carry this error."""
        if self.recorded_cost is None or self.reported_cost is None:
            return None
        return self.recorded_cost - self.reported_cost

    @property
    def rules_error_size(self) -> Decimal | None:
        """:attr:`rules_error` without its sign, for the page to say higher or lower."""
        return None if self.rules_error is None else abs(self.rules_error)


def fix_panel(savings: SessionSavings) -> FixPanel:
    """The panel of a session's stored figures (``SessionSavings.results``), each scenario with the
    requests it touches by recorded miss cause (one query of its ``ScenarioSaving`` rows)."""
    touched = _touched_by_cause(savings.session_id)
    shown = [
        _scenario(result, touched.get(str(result.get("scenario")), ()))
        for result in savings.results
        if result.get("scenario") != AS_RECORDED
    ]
    supported = sorted(
        (s for s in shown if s.supported and s.saving is not None),
        key=lambda s: (-(s.saving or 0), s.scenario != BEST, s.scenario),
    )
    return FixPanel(
        supported=supported,
        unsupported=[s for s in shown if s not in supported],
        recorded_cost=savings.recorded_cost,
        reported_cost=savings.reported_cost,
        error=savings.error,
    )


def _touched_by_cause(session_id: int) -> dict[str, tuple[TouchedCause, ...]]:
    rows = (
        ScenarioSaving.objects.filter(session_id=session_id, touched__gt=0)
        .values("scenario", "cause")
        .annotate(count=Sum("touched"))
        .order_by("scenario", "-count", "cause")
    )
    found: dict[str, list[TouchedCause]] = {}
    for row in rows:
        found.setdefault(row["scenario"], []).append(TouchedCause(cause=row["cause"], requests=row["count"]))
    return {scenario: tuple(causes) for scenario, causes in found.items()}


def _scenario(result: dict[str, object], by_cause: tuple[TouchedCause, ...]) -> ScenarioShown:
    saving = result.get("saving_usd")
    share = result.get("saving_share")
    touched = result.get("touched_requests")
    requests = result.get("requests")
    combination = result.get("combination")
    return ScenarioShown(
        scenario=str(result.get("scenario", "")),
        supported=bool(result.get("supported")),
        reason=str(result.get("reason") or ""),
        change=str(result.get("change") or ""),
        # Through str: the stored JSON number is the engine's eight-place figure, not a binary float's.
        saving=None if saving is None else Decimal(str(saving)),
        share=None if not isinstance(share, int | float) else float(share),
        touched=touched if isinstance(touched, int) else None,
        requests=requests if isinstance(requests, int) else 0,
        combination=tuple(str(name) for name in combination) if isinstance(combination, list) else (),
        touched_by_cause=by_cause,
    )


@dataclass(frozen=True, slots=True)
class MissCost:
    """What a set of requests paid for their misses, and how many missed (a miss cost above 0)."""

    total: Decimal | None
    """None when no request of the set has a priced analysis."""
    missed: int
    priced: int


def miss_cost_of(analyses: QuerySet[RequestAnalysis]) -> MissCost:
    """The sum of ``miss_cost`` over ``analyses``, in one query."""
    figures = analyses.aggregate(
        total=Sum("miss_cost"),
        missed=Count("pk", filter=Q(miss_cost__gt=0)),
        priced=Count("miss_cost"),
    )
    return MissCost(total=figures["total"], missed=figures["missed"], priced=figures["priced"])


def session_miss_cost(session: Session) -> MissCost:
    """What the session's requests paid for their misses."""
    return miss_cost_of(RequestAnalysis.objects.filter(session=session))


def best_saving_of(sessions: QuerySet[Session]) -> Decimal | None:
    """What the best combination of fixes would save over ``sessions``, from their stored figures;
    None when none of them has any."""
    total: Decimal | None = SessionSavings.objects.filter(session__in=sessions).aggregate(
        total=Sum("best_saving")
    )["total"]
    return total


@dataclass(frozen=True, slots=True)
class RangeMoney:
    """The overview's two money KPIs over a time range."""

    lost: MissCost
    """What the requests that started in the range paid for their misses."""
    best_saving: Decimal | None
    """What the best fix would save on the sessions active in the range: a saving is figured
    per session, so a session counts whole when any of it falls in the range."""


def misses_in_range(window: TimeWindow | None) -> QuerySet[RequestAnalysis]:
    """The analyses of the requests that started in the window (all of them over "all")."""
    analyses = RequestAnalysis.objects.all()
    if not range_limited(window):
        return analyses
    return in_window(analyses, window, "request__started_at")


def range_money(window: TimeWindow | None) -> RangeMoney:
    """What misses cost and what the best fix would save over the window; two queries."""
    return RangeMoney(
        lost=miss_cost_of(misses_in_range(window)), best_saving=best_saving_of(active_sessions(window))
    )


MISSES_SHOWN = 20


def costliest_misses(
    *, source: str = "", session_id: int | None = None, limit: int = MISSES_SHOWN
) -> QuerySet[RequestAnalysis]:
    """The ``limit`` analysed requests whose misses cost most, most first, of one source or session
    when given; each with its request, session and source read along. One query, off the index
    on ``miss_cost``."""
    misses = RequestAnalysis.objects.filter(miss_cost__gt=0)
    if source:
        misses = misses.filter(session__source__name=source)
    if session_id is not None:
        misses = misses.filter(session_id=session_id)
    # The analysis document and the request's body are the bulk of each row and not shown.
    return (
        misses.select_related("request", "session", "session__source")
        .defer("data", *(f"request__{name}" for name in _REQUEST_FIELDS_SKIPPED))
        .order_by("-miss_cost", "-request_id")[:limit]
    )


_REQUEST_FIELDS_SKIPPED = ("params", "units", "markers", "render_warnings", "usage_raw")
