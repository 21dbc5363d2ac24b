"""What a fix would save across sessions, from the stored figures alone: no replay on a page view.

:func:`savings_ranked` sums one scenario's :class:`~dashboard.models.ScenarioSaving` rows by source,
client release, model or recorded miss cause; :func:`sessions_ranked` lists sessions by what their
best combination of fixes would save. Both take the sessions to count (a page's time range and
filters, as a queryset), so a page decides what "the fleet" is and these only add up.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Literal

from django.db.models import Count, QuerySet, Sum

from dashboard.models import ScenarioSaving, Session, SessionSavings
from projections.cache.whatif.scenarios import BEST

RankBy = Literal["source", "client_version", "model", "cause"]

_COLUMNS: Final[dict[str, str]] = {
    "source": "session__source__name",
    "client_version": "client_version",
    "model": "model",
    "cause": "cause",
}


@dataclass(frozen=True, slots=True)
class RankedSaving:
    """One source, release, model or cause and what the scenario would save on its requests."""

    name: str
    """Empty for requests the source did not say (a release), or that did not miss (a cause)."""
    sessions: int
    requests: int
    recorded_cost: Decimal
    saving: Decimal


def savings_ranked(
    *, by: RankBy, scenario: str = BEST, sessions: QuerySet[Session] | None = None, limit: int = 20
) -> list[RankedSaving]:
    """The ``limit`` names of ``by`` whose requests the scenario saves most on, most first; over
    ``sessions`` (default: every session). One query."""
    rows = ScenarioSaving.objects.filter(scenario=scenario)
    if sessions is not None:
        rows = rows.filter(session__in=sessions)
    column = _COLUMNS[by]
    grouped = (
        rows.values(column)
        .annotate(
            saved=Sum("saving"),
            recorded=Sum("recorded_cost"),
            request_count=Sum("requests"),
            session_count=Count("session", distinct=True),
        )
        .order_by("-saved", column)[:limit]
    )
    return [
        RankedSaving(
            name=row[column] or "",
            sessions=row["session_count"],
            requests=row["request_count"],
            recorded_cost=row["recorded"],
            saving=row["saved"],
        )
        for row in grouped
    ]


def sessions_ranked(
    *, sessions: QuerySet[Session] | None = None, limit: int = 20
) -> QuerySet[SessionSavings]:
    """The ``limit`` sessions whose best combination of fixes would save most, most first, each
    with its session and source read along."""
    kept = SessionSavings.objects.filter(best_saving__gt=0)
    if sessions is not None:
        kept = kept.filter(session__in=sessions)
    return kept.select_related("session", "session__source").order_by("-best_saving", "session_id")[:limit]


@dataclass(frozen=True, slots=True)
class SessionSaving:
    """One session and what the scenario would save on its requests of one name of ``by``."""

    session: Session
    requests: int
    recorded_cost: Decimal
    saving: Decimal


def sessions_saving_on(
    *,
    by: RankBy,
    name: str,
    scenario: str = BEST,
    sessions: QuerySet[Session] | None = None,
    limit: int = 50,
) -> list[SessionSaving]:
    """The ``limit`` sessions whose requests of ``name`` (a source, release, model or cause, as
    :func:`savings_ranked` names them) the scenario saves most on, most first. Two queries."""
    rows = ScenarioSaving.objects.filter(scenario=scenario, **{_COLUMNS[by]: name})
    if sessions is not None:
        rows = rows.filter(session__in=sessions)
    grouped = list(
        rows.values("session_id")
        .annotate(saved=Sum("saving"), recorded=Sum("recorded_cost"), request_count=Sum("requests"))
        .order_by("-saved", "session_id")[:limit]
    )
    found = Session.objects.select_related("source").in_bulk([row["session_id"] for row in grouped])
    return [
        SessionSaving(
            session=found[row["session_id"]],
            requests=row["request_count"],
            recorded_cost=row["recorded"],
            saving=row["saved"],
        )
        for row in grouped
        if row["session_id"] in found
    ]
