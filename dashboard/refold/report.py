"""A re-fold run's report: counts, retained state and the sessions that diverged or failed, computed
from the run's result rows (the authority, not its progress counters)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, Max, Q, Sum

from dashboard.models import FoldRun, FoldRunResult


@dataclass(frozen=True)
class StateBytes:
    """Retained state under one version: total over sessions, and median and max per session."""

    version: int
    total: int
    median: float
    max: int

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "total": self.total, "median": self.median, "max": self.max}


@dataclass
class FoldRunReport:
    """What a run found, computed from its result rows (the authority, not the progress counters)."""

    run: FoldRun
    sessions: int
    events: int
    identical: int
    diverged: int
    errored: int
    from_bytes: StateBytes
    to_bytes: StateBytes
    fold_seconds: float
    divergences: list[FoldRunResult] = field(default_factory=list)
    errors: list[FoldRunResult] = field(default_factory=list)

    @property
    def wall_seconds(self) -> float | None:
        return self.run.wall_seconds

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-able data; per-session lists name sessions by id and external id."""
        return {
            "run": self.run.pk,
            "key": self.run.key,
            "from": self.run.from_version,
            "to": self.run.to_version,
            "status": self.run.status,
            "sessions": self.sessions,
            "events": self.events,
            "identical": self.identical,
            "diverged": self.diverged,
            "errored": self.errored,
            "state_bytes": {"from": self.from_bytes.as_dict(), "to": self.to_bytes.as_dict()},
            "fold_seconds": round(self.fold_seconds, 3),
            "wall_seconds": None if self.wall_seconds is None else round(self.wall_seconds, 3),
            "divergences": [
                {
                    "session": result.session_id,
                    "external_id": result.session.external_id,
                    "seq": result.divergent_seq,
                    "type": result.divergent_type,
                    "from_view": result.from_view,
                    "to_view": result.to_view,
                }
                for result in self.divergences
            ],
            "errors": [
                {
                    "session": result.session_id,
                    "external_id": result.session.external_id,
                    "error": result.error,
                }
                for result in self.errors
            ],
        }


def fold_run_report(*, run: FoldRun, limit: int | None = None) -> FoldRunReport:
    """The run's report; ``limit`` caps the listed divergences and errors (the counts stay whole).

    The counts, sums and sizes are one aggregate query (on SQLite, which has no median, the state
    sizes come back row by row instead). A run over every session of a fleet has a hundred thousand
    result rows, and their model's ordering (by run and session, so by the run's and the session's
    own orderings) would join and sort them all; none of these reads needs an order.
    """
    results = FoldRunResult.objects.filter(run=run).order_by()
    sizes: dict[str, Any] = {
        f"{side}_{name}": aggregate(f"{side}_state_bytes", **extra)
        for side in ("from", "to")
        for name, aggregate, extra in (("total", Sum, {"default": 0}), ("max", Max, {"default": 0}))
    }
    if connection.vendor == "postgresql":
        sizes |= {f"{side}_median": Median(f"{side}_state_bytes") for side in ("from", "to")}
    figures = results.aggregate(
        sessions=Count("id"),
        events=Sum("events", default=0),
        identical=Count("id", filter=Q(status=FoldRunResult.Status.IDENTICAL)),
        diverged=Count("id", filter=Q(status=FoldRunResult.Status.DIVERGED)),
        errored=Count("id", filter=Q(status=FoldRunResult.Status.ERROR)),
        fold_seconds=Sum("seconds", default=0.0),
        **sizes,
    )
    if connection.vendor != "postgresql":
        rows = list(results.values_list("from_state_bytes", "to_state_bytes"))
        figures["from_median"] = statistics.median(row[0] for row in rows) if rows else None
        figures["to_median"] = statistics.median(row[1] for row in rows) if rows else None
    listed = results.select_related("session").order_by("session_id")
    divergences = listed.filter(divergent_seq__isnull=False)
    errors = listed.filter(status=FoldRunResult.Status.ERROR)
    return FoldRunReport(
        run=run,
        sessions=figures["sessions"],
        events=figures["events"],
        identical=figures["identical"],
        diverged=figures["diverged"],
        errored=figures["errored"],
        from_bytes=_state_bytes(run.from_version, figures, "from"),
        to_bytes=_state_bytes(run.to_version, figures, "to"),
        fold_seconds=figures["fold_seconds"],
        divergences=list(divergences[:limit] if limit else divergences),
        errors=list(errors[:limit] if limit else errors),
    )


class Median(Aggregate):
    """The middle value, or the mean of the middle two, as :func:`statistics.median` gives it
    (PostgreSQL's continuous percentile at one half)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _state_bytes(version: int, figures: dict[str, Any], side: str) -> StateBytes:
    median = figures[f"{side}_median"]
    return StateBytes(
        version, figures[f"{side}_total"], 0.0 if median is None else float(median), figures[f"{side}_max"]
    )
