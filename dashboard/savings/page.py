"""The savings page's figures: what a fix would save, ranked by source, client release, model and
miss cause over the sessions active in a time range, and the sessions behind one of them.

Everything is summed from the stored :class:`~dashboard.models.ScenarioSaving` rows
(:mod:`dashboard.savings.ranking`), never replayed on a page view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from django.core.cache import cache
from django.db.models import Max, QuerySet

from dashboard.fleet.usage import active_sessions, fleet_window
from dashboard.models import Session, SessionSavings
from dashboard.savings.ranking import RankBy, RankedSaving, SessionSaving, savings_ranked, sessions_saving_on
from dashboard.web.time_range import TimeWindow
from projections.cache.whatif.scenarios import AS_RECORDED, BEST, SCENARIO_NAMES

RANKINGS: Final[tuple[tuple[RankBy, str], ...]] = (
    ("source", "Sources"),
    ("client_version", "Client versions"),
    ("model", "Models"),
    ("cause", "Miss causes"),
)
SCENARIOS_OFFERED: Final[tuple[str, ...]] = tuple(name for name in SCENARIO_NAMES if name != AS_RECORDED)
EXPORT_COLUMNS: Final[tuple[str, ...]] = (
    "by",
    "name",
    "scenario",
    "sessions",
    "requests",
    "recorded_cost_usd",
    "saving_usd",
)


@dataclass(frozen=True, slots=True)
class SavingsQuery:
    """What the page was asked for: a range, a scenario and, to drill down, one name of one ``by``."""

    range: str
    scenario: str
    by: RankBy | None
    name: str | None

    @classmethod
    def from_query(cls, *, range_name: str, params: Any, errors: dict[str, str]) -> SavingsQuery:
        """Read ``scenario``, ``by`` and ``name``; an unknown one is named in ``errors`` and left out."""
        scenario = params.get("scenario") or BEST
        if scenario not in SCENARIOS_OFFERED:
            errors["scenario"] = f"no scenario {scenario!r}; one of {', '.join(SCENARIOS_OFFERED)}"
            scenario = BEST
        by_raw = params.get("by") or None
        by: RankBy | None = None
        for known, _ in RANKINGS:
            if by_raw == known:
                by = known
        if by_raw is not None and by is None:
            errors["by"] = f"no ranking {by_raw!r}; one of {', '.join(name for name, _ in RANKINGS)}"
        name = params.get("name")
        return cls(range=range_name, scenario=scenario, by=by, name=name if by is not None else None)


def range_sessions(range_name: str) -> tuple[TimeWindow | None, QuerySet[Session]]:
    """The window of the range and the sessions active in it (every session with no window)."""
    window = fleet_window(range_name)
    return window, active_sessions(window)


RANKINGS_CACHE_SECONDS: Final = 60


def rankings(
    query: SavingsQuery, window: TimeWindow | None, sessions: QuerySet[Session]
) -> list[tuple[RankBy, str, list[RankedSaving]]]:
    """Each ranking of the page, over ``sessions`` (those active in ``window``, as
    :func:`range_sessions` gives them): one query each, from the cache while no session's figures
    were made since. For a minute at most it may miss a change the key does not name: a session
    deleted with its figures or moved to another source, or a refresh that began before the newest
    one and committed after it.

    At 100,000 sessions the four aggregates read every scenario row of the range, about a second
    on each view of the page, while the figures change only as sessions are analysed.
    """
    newest = SessionSavings.objects.aggregate(made=Max("computed_at"), last=Max("id"))
    made = newest["made"].timestamp() if newest["made"] else 0
    bounds = f"{window.name}:{window.start.timestamp()}:{window.end.timestamp()}" if window else "none"
    key = f"savings-rankings:{query.scenario}:{bounds}:{newest['last']}:{made}"
    ranked: list[tuple[RankBy, str, list[RankedSaving]]] | None = cache.get(key)
    if ranked is None:
        ranked = [
            (by, title, savings_ranked(by=by, scenario=query.scenario, sessions=sessions))
            for by, title in RANKINGS
        ]
        cache.set(key, ranked, RANKINGS_CACHE_SECONDS)
    return ranked


def drill_down(query: SavingsQuery, sessions: QuerySet[Session]) -> list[SessionSaving] | None:
    """The sessions behind the name asked for, or None when none was."""
    if query.by is None or query.name is None:
        return None
    return sessions_saving_on(by=query.by, name=query.name, scenario=query.scenario, sessions=sessions)


def export_rows(
    query: SavingsQuery, window: TimeWindow | None, sessions: QuerySet[Session]
) -> Iterator[dict[str, Any]]:
    """The page's figures as export rows: the drill-down's sessions when one was asked for, else
    every ranking's names."""
    sessions_shown = drill_down(query, sessions)
    if sessions_shown is not None:
        for row in sessions_shown:
            yield _row("session", row.session.external_id, query.scenario, 1, row.requests, row)
        return
    for by, _, ranked in rankings(query, window, sessions):
        for named in ranked:
            yield _row(by, named.name, query.scenario, named.sessions, named.requests, named)


def _row(
    by: str, name: str, scenario: str, sessions: int, requests: int, figures: RankedSaving | SessionSaving
) -> dict[str, Any]:
    return {
        "by": by,
        "name": name,
        "scenario": scenario,
        "sessions": sessions,
        "requests": requests,
        "recorded_cost_usd": str(figures.recorded_cost),
        "saving_usd": str(figures.saving),
    }
