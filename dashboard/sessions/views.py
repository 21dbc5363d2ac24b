from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import F
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.analysis.views import session_analysis_context
from dashboard.costs.pricing import prices_load
from dashboard.costs.session_costs import listed_sessions_priced, sessions_price_unpriced, unpriced_models
from dashboard.fleet.client_versions import known_client_versions
from dashboard.models import ProjcacheCheck, ProjectionRow, Request, Session, Source, Warning
from dashboard.savings.refresh import session_savings
from dashboard.savings.shown import fix_panel, session_miss_cost
from dashboard.sessions.breakdown_chart import session_breakdown_chart
from dashboard.sessions.breakdown_series import (
    SERIES_CACHE_SECONDS,
    BreakdownSeries,
    series_cache_key,
    session_breakdown_series_cached,
)
from dashboard.sessions.listing import SessionFilters, keyset_page
from dashboard.sessions.timeline_views import events_context, host_notes_context
from dashboard.storage.distinct_values import distinct_values
from dashboard.web.htmx import HtmxHttpRequest
from dashboard.web.money import usd
from projections.cache.explain.verdict import label_meaning

REQUESTS_PER_PAGE = 25
"""Requests a page of the session's table shows: the charts above already draw every one."""
SESSION_WARNINGS_SHOWN = 50
KNOWN_MODELS_SECONDS = 60


def sessions_page(params: QueryDict) -> dict[str, Any]:
    """The filtered, sorted keyset page of sessions the list shows, with the filters echoed back."""
    filters = SessionFilters.from_query(params)
    if filters.sort_field == "cost_usd":
        sessions_price_unpriced()  # so none sorts below $0 for want of having been priced
    page = keyset_page(filters, Session.objects.select_related("source", "parent"), params)
    listed_sessions_priced(page.rows)
    prices = prices_load()
    for session in page.rows:
        session.cost_display = usd(session.cost_usd)
        session.unpriced_models = unpriced_models(session, prices) if session.unpriced_requests else []
    return {
        "page": page,
        "sort": filters.sort,
        "filters": filters,
        "sources": Source.objects.values_list("name", flat=True),
        "models": known_models(),
        "client_versions": known_client_versions(),
    }


def known_models() -> list[str]:
    """Every model seen, for the filter; read off the requests' model index, and cached briefly."""

    def load() -> list[str]:
        return distinct_values(Request, "model")

    return list(cache.get_or_set("sessions:known-models", load, KNOWN_MODELS_SECONDS))


@require_GET
@vary_on_headers("HX-Request")
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    template = "dashboard/session_list.html" + ("#session-table" if request.htmx else "")
    return render(request, template, sessions_page(request.GET))


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("source", "parent"), pk=session_id)
    # The cause of each request's first change and its miss label, from its stored analysis (None
    # until analysed): a usage-only log has labels but no first change to name.
    analysed = session.requests.annotate(miss_cause=F("analysis__cause"), miss_label=F("analysis__label"))
    requests = Paginator(analysed.order_by("ordinal"), REQUESTS_PER_PAGE).get_page(
        request.GET.get("requests_page")
    )
    for call in requests:
        call.label_meaning = label_meaning(call.miss_label)  # type: ignore[attr-defined]
    context = {
        "session": session,
        "children": session.children.select_related("source").order_by("started_at", "id"),
        "requests": requests,
        "warnings": _session_warnings(session),
        **events_context(session, request.GET),
        **host_notes_context(session, request.GET),
        **session_analysis_context(session),
        **session_breakdown_context(session),
        # A compaction subagent's calls re-send the parent's context: its breakdown band says so.
        "compaction_subagent": session.parent_id is not None
        and session.requests.exists()
        and not session.requests.exclude(lineage="compaction").exists(),
        "miss_cost": session_miss_cost(session),
        "fixes": fix_panel(session_savings(session=session)),
    }
    return render(request, "dashboard/session_detail.html", context)


def _session_warnings(session: Session) -> list[Warning]:
    """The session's warnings as the inbox orders them: the costliest first, then the latest."""
    warnings = list(
        session.warnings.select_related("request").order_by(
            F("cost_at_stake").desc(nulls_last=True), F("happened_at").desc(nulls_last=True), "-id"
        )[:SESSION_WARNINGS_SHOWN]
    )
    for warning in warnings:
        warning.cost_display = usd(warning.cost_at_stake)  # type: ignore[attr-defined]
    return warnings


def session_breakdown_context(session: Session) -> dict[str, Any]:
    """The session page's breakdown: the series' summary, its chart, the "now" panel, the stored rows
    and the host's projection-cache checks.

    What the page shows of the series is kept beside it in the cache, as long as the series itself
    is: a long session's series is large, and drawing its chart takes longer than reading it.
    """
    series_key = series_cache_key(session)
    shown = cache.get(f"{series_key}:shown") if cache.has_key(series_key) else None
    if shown is None:
        shown = _breakdown_shown(session_breakdown_series_cached(session=session))
        cache.set(f"{series_key}:shown", shown, SERIES_CACHE_SECONDS)
    return {
        **shown,
        "projection_rows": ProjectionRow.objects.filter(session=session).order_by("key", "ver"),
        "projcache_checks": ProjcacheCheck.objects.filter(session=session).order_by("key", "ver"),
    }


def _breakdown_shown(series: BreakdownSeries) -> dict[str, Any]:
    now = series.now
    panel = None
    if now is not None and series.can_tell:
        window = now.window
        panel = {
            "system": now.system,
            "tools": now.tools,
            "messages": now.messages,
            "inferred": now.inferred,
            "first_inferred": series.first_inferred,
            "used": now.used,
            "window": window,
            "free": None if window is None else max(0, window - now.used),
            "fill": None if not window else now.used / window,
            "auto_compact": series.auto_compact,
            "provider": series.last_provider,
            "raw": now.raw,
            "calibration": now.calibration,
            "shortfall": series.shortfall,
        }
    return {
        "breakdown": BreakdownShown(
            error=series.error,
            basis=series.basis,
            breakdown_version=series.breakdown_version,
            events=series.events,
            markers=len(series.markers),
        ),
        "breakdown_figure": session_breakdown_chart(series) if panel is not None else None,
        "breakdown_now": panel,
    }


@dataclass(frozen=True)
class BreakdownShown:
    """What the page says of the series beside its chart."""

    error: str
    basis: str | None
    breakdown_version: int
    events: int
    markers: int
