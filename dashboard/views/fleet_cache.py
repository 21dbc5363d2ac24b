"""The overview's fleet panels: hit rate per day and per source, the warnings by kind, recent
material misses, the sessions that re-wrote or wasted the most cache, the misses by the provider's
own stated reason and the hit rate by client release."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db.models import Count, Sum
from django.db.models.functions import TruncDay

from dashboard.charts import fleet_hit_rate_chart, fleet_sources_chart, warnings_by_kind_chart
from dashboard.models import Request, RequestAnalysis, Session, Warning
from dashboard.services.costs import sessions_cost_compute
from dashboard.views.client_versions import hit_rate_by_client_version
from projections.hit_rate import hit_rate
from projections.provider_diagnosis import PROVIDER_HIT

FLEET_DAYS = 90
TOP_REWRITERS = 10
RECENT_MISSES = 10
WASTE_CANDIDATES = 50


def fleet_days_by_source() -> list[tuple[date, str, int, float | None]]:
    """Per day and source: uncached input tokens and hit rate, aggregated in SQL."""
    rows = (
        Request.objects.filter(started_at__isnull=False)
        .annotate(day=TruncDay("started_at"))
        .values("day", "session__source__name")
        .annotate(
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by("day", "session__source__name")
    )
    out = [
        (row["day"].date(), row["session__source__name"], row["uncached"] or 0, _rate(row)) for row in rows
    ]
    cutoff = sorted({day for day, _, _, _ in out})[-FLEET_DAYS:]
    return [row for row in out if row[0] in set(cutoff)]


def _rate(sums: dict[str, Any]) -> float | None:
    """The hit rate of one row of token sums (``None`` sums: no request reported that figure)."""
    write_5m, write_1h = sums["write_5m"], sums["write_1h"]
    writes = None if write_5m is None and write_1h is None else (write_5m or 0) + (write_1h or 0)
    return hit_rate(read=sums["read"], uncached=sums["uncached"], writes=writes)


def misses_by_provider_reason() -> list[dict[str, Any]]:
    """Requests whose response stated a cache-miss reason, counted by provider and reason with the
    tokens the provider says missed, most frequent first (one aggregate query).

    A provider that found no divergence (OpenAI's ``cache_hit``) stated no miss and is left out;
    one that could not compare (``previous_message_not_found``, ``unavailable``) is counted under
    that word, so a fleet that asks for diagnostics in vain shows it.
    """
    return list(
        Request.objects.exclude(provider_miss_reason__in=("", PROVIDER_HIT))
        .values("provider", "provider_miss_reason")
        .annotate(requests=Count("id"), missed=Sum("provider_missed_tokens"))
        .order_by("-requests", "provider", "provider_miss_reason")
    )


def top_wasted_writes() -> list[dict[str, Any]]:
    """The sessions whose cache writes were most often never read back, by wasted write cost.

    The waste of a session needs its requests in order, so it is computed for the sessions that
    wrote the most (the only ones that can waste much) and ranked among those.
    """
    candidates = list(
        Session.objects.select_related("source").order_by("-cache_write_tokens", "id")[:WASTE_CANDIDATES]
    )
    costs = sessions_cost_compute(session_ids=[session.pk for session in candidates])
    ranked = []
    for session in candidates:
        cost = costs[session.pk]
        if cost.wasted_write_tokens:
            ranked.append(
                {"session": session, "tokens": cost.wasted_write_tokens, "cost": cost.wasted_write_cost}
            )
    ranked.sort(key=lambda row: (-row["cost"], -row["tokens"]))
    return ranked[:TOP_REWRITERS]


def fleet_cache_context() -> dict[str, Any]:
    """Fleet hit rate per day (aggregated in SQL) and the sessions that re-wrote the most tokens."""
    days = (
        Request.objects.filter(started_at__isnull=False)
        .annotate(day=TruncDay("started_at"))
        .values("day")
        .annotate(
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by("-day")[:FLEET_DAYS]
    )
    points = []
    for day in reversed(list(days)):
        prompt = sum(day[k] or 0 for k in ("read", "uncached", "write_5m", "write_1h"))
        points.append((day["day"].date(), _rate(day), prompt))
    rewriters = list(
        RequestAnalysis.objects.values("session")
        .annotate(rewritten=Sum("rewritten_tokens"))
        .filter(rewritten__gt=0)
        .order_by("-rewritten", "session")[:TOP_REWRITERS]
    )
    sessions = Session.objects.select_related("source").in_bulk([r["session"] for r in rewriters])
    by_source = fleet_days_by_source()
    kinds = list(Warning.objects.values_list("kind").annotate(seen=Sum("count")).order_by("-seen", "kind"))
    misses = (
        RequestAnalysis.objects.filter(material=True)
        .select_related("request", "session", "session__source")
        .order_by("-request__started_at", "-id")[:RECENT_MISSES]
    )
    return {
        "fleet_hit_rate_chart": fleet_hit_rate_chart(points) if points else None,
        "fleet_sources_chart": fleet_sources_chart(by_source) if by_source else None,
        "warnings_chart": warnings_by_kind_chart(kinds) if kinds else None,
        "recent_misses": list(misses),
        "wasters": top_wasted_writes(),
        "provider_reasons": misses_by_provider_reason(),
        "client_versions": hit_rate_by_client_version(),
        "fleet_days": points,
        "rewriters": [
            {"session": sessions[r["session"]], "rewritten": r["rewritten"]}
            for r in rewriters
            if r["session"] in sessions
        ],
    }
