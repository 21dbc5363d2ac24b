"""The overview's fleet panels over its time range: hit rate per bucket and per source, the warnings
by kind, recent material misses, the sessions that re-wrote or wasted the most cache, the misses by
the provider's own stated reason and the hit rate by client release."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from django.db.models import Count, QuerySet, Sum

from dashboard.analysis.cause_costs import attribution_by_endpoint
from dashboard.costs.session_costs import inputs_key_of, sessions_cost
from dashboard.fleet.charts import BucketPoint, fleet_hit_rate_chart, fleet_sources_chart
from dashboard.fleet.usage import (
    ActiveSessions,
    FleetUsage,
    Usage,
    active_sessions,
    active_sessions_count,
    client_version_rows,
    fleet_usage,
    fleet_window,
)
from dashboard.models import Request, RequestAnalysis, Session, Warning
from dashboard.sessions.listing import sort_expression
from dashboard.web.charts import warnings_by_kind_chart
from dashboard.web.time_range import DEFAULT_RANGE, TimeWindow, range_limited
from projections.providers.diagnosis import PROVIDER_HIT

TOP_REWRITERS = 10
TOP_SOURCES = 5
OTHER_SOURCES = "{count} other sources"
RECENT_MISSES = 10
WASTE_CANDIDATES = 50


def bucket_points(
    usage: FleetUsage,
    by_bucket: dict[Any, Usage],
    source: str = "",
    costs: dict[Any, Decimal] | None = None,
    *,
    linked: bool = True,
) -> list[BucketPoint]:
    """One point per bucket of the window, empty buckets included, each with its requests' URL
    (none when not ``linked``)."""
    points = []
    for start in usage.window.buckets:
        figures = by_bucket.get(start, Usage())
        cost = (costs or {}).get(start)
        points.append(
            BucketPoint(
                start=start,
                requests=figures.requests,
                hit_rate=figures.hit_rate,
                prompt=figures.prompt,
                uncached=figures.uncached,
                url=usage.requests_url(start, source) if linked else None,
                billed=figures.uncached + figures.write,
                cost=float(cost) if cost is not None else None,
            )
        )
    return points


def source_series(usage: FleetUsage) -> dict[str, list[BucketPoint]]:
    """Each source's points over the window, the costliest :data:`TOP_SOURCES` apart and the rest
    summed as one "other" series, without links: eight sources' bars and lines swamp the chart's
    legend."""
    names = sorted(usage.by_source_bucket)
    spent = {name: sum(usage.cost_by_source_bucket.get(name, {}).values(), Decimal(0)) for name in names}
    tokens = {
        name: sum(u.uncached + u.write for u in usage.by_source_bucket[name].values()) for name in names
    }
    ranked = sorted(names, key=lambda name: (-spent[name], -tokens[name], name))
    shown, rest = ranked[:TOP_SOURCES], ranked[TOP_SOURCES:]
    if len(rest) == 1:  # an "other" of one source is that source, named
        shown, rest = ranked, []
    series = {
        name: bucket_points(usage, usage.by_source_bucket[name], name, usage.cost_by_source_bucket.get(name))
        for name in shown
    }
    if rest:
        merged: dict[Any, Usage] = defaultdict(Usage)
        merged_costs: dict[Any, Decimal] = defaultdict(Decimal)
        for name in rest:
            for bucket, figures in usage.by_source_bucket[name].items():
                merged[bucket].add(figures)
            for bucket, cost in usage.cost_by_source_bucket.get(name, {}).items():
                merged_costs[bucket] += cost
        series[OTHER_SOURCES.format(count=len(rest))] = bucket_points(
            usage, merged, "", merged_costs, linked=False
        )
    return series


def in_window(requests: QuerySet[Any], window: TimeWindow | None, field: str = "started_at") -> QuerySet[Any]:
    """``requests`` whose start falls in the window (all of them without a window)."""
    if window is None:
        return requests
    return requests.filter(**{f"{field}__gte": window.start, f"{field}__lt": window.end})


def misses_by_provider_reason(window: TimeWindow | None = None) -> list[dict[str, Any]]:
    """Requests whose response stated a cache-miss reason, counted by provider and reason with the
    tokens the provider says missed, most frequent first (one aggregate query).

    A provider that found no divergence (OpenAI's ``cache_hit``) stated no miss and is left out;
    one that could not compare (``previous_message_not_found``, ``unavailable``) is counted under
    that word, so a fleet that asks for diagnostics in vain shows it.
    """
    # Excluding "" on its own lets the database read the partial index of requests with a reason.
    stated = Request.objects.exclude(provider_miss_reason="").exclude(provider_miss_reason=PROVIDER_HIT)
    return list(
        in_window(stated, window)
        .values("provider", "provider_miss_reason")
        .annotate(requests=Count("id"), missed=Sum("provider_missed_tokens"))
        .order_by("-requests", "provider", "provider_miss_reason")
    )


def warnings_in_range(window: TimeWindow | None) -> QuerySet[Warning]:
    """The warnings of the window, by the moment each concerns; one with none (a whole-log check) is
    counted over all time only, which counts every warning."""
    if not range_limited(window):
        return Warning.objects.all()
    return in_window(Warning.objects.all(), window, "happened_at")


def top_wasted_writes(window: TimeWindow | None = None) -> list[dict[str, Any]]:
    """The sessions whose cache writes were most often never read back, by wasted write cost.

    The waste of a session needs its requests in order, so it is computed for the sessions that
    wrote the most (the only ones that can waste much) and ranked among those.
    """
    # A session that wrote nothing, or whose provider never said, has no waste to rank.
    # Ordered as the sessions list's write sort index holds the column, so the database reads the
    # top of that index rather than sorting every session of the range.
    candidates = list(
        active_sessions(window)
        .select_related("source", "analysis")
        .filter(cache_write_tokens__gt=0)
        .alias(written=sort_expression("cache_write_tokens"))
        .order_by("-written", "-id")[:WASTE_CANDIDATES]
    )
    costs = sessions_cost(keys={session.pk: inputs_key_of(session) for session in candidates})
    ranked = []
    for session in candidates:
        cost = costs[session.pk]
        if cost.wasted_write_tokens:
            ranked.append(
                {"session": session, "tokens": cost.wasted_write_tokens, "cost": cost.wasted_write_cost}
            )
    # By cost, as the panel says; a session with no priced model after every priced one, and the
    # older of two that wasted alike first.
    ranked.sort(key=lambda row: (row["cost"] is None, -(row["cost"] or 0), -row["tokens"], row["session"].pk))
    return ranked[:TOP_REWRITERS]


def top_rewriters(window: TimeWindow | None) -> list[dict[str, Any]]:
    """The sessions whose requests in the window re-wrote the most tokens an earlier request had cached."""
    rewriters = list(
        in_window(RequestAnalysis.objects.all(), window, "request__started_at")
        .values("session")
        .annotate(rewritten=Sum("rewritten_tokens"))
        .filter(rewritten__gt=0)
        .order_by("-rewritten", "session")[:TOP_REWRITERS]
    )
    sessions = Session.objects.select_related("source").in_bulk([r["session"] for r in rewriters])
    return [
        {"session": sessions[r["session"]], "rewritten": r["rewritten"]}
        for r in rewriters
        if r["session"] in sessions
    ]


def fleet_cache_context(
    usage: FleetUsage | None = None, active: ActiveSessions | None = None
) -> dict[str, Any]:
    """Every fleet panel over ``usage``'s window (the default range's when not given)."""
    if usage is None:
        window = fleet_window(DEFAULT_RANGE)
        usage = fleet_usage(window) if window is not None else None
    window = usage.window if usage is not None else None
    if active is None and window is not None:
        active = active_sessions_count(window)
    points = bucket_points(usage, usage.by_bucket) if usage is not None and usage.total.requests else []
    by_source = source_series(usage) if usage is not None else {}
    step = window.step.value if window is not None else ""
    kinds = list(
        warnings_in_range(window).values_list("kind").annotate(seen=Sum("count")).order_by("-seen", "kind")
    )
    misses = (
        in_window(RequestAnalysis.objects.filter(material=True), window, "request__started_at")
        .select_related("request", "session", "session__source")
        .order_by("-request__started_at", "-id")[:RECENT_MISSES]
    )
    return {
        "range_limited": range_limited(window),
        "fleet_hit_rate_chart": fleet_hit_rate_chart(points, step=step) if points else None,
        "fleet_sources_chart": fleet_sources_chart(by_source, step=step) if by_source else None,
        "warnings_chart": warnings_by_kind_chart(kinds) if kinds else None,
        "recent_misses": list(misses),
        "provider_reasons": misses_by_provider_reason(window),
        "client_versions": client_version_rows(usage, active) if usage is not None and active else [],
        "fleet_points": [point for point in points if point.requests],
        "rewriters": top_rewriters(window),
        "attribution_endpoints": attribution_by_endpoint(
            in_window(RequestAnalysis.objects.all(), window, "request__started_at")
        ),
    }
