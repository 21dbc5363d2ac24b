from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.fleet.cache_panels import (
    fleet_cache_context,
    top_wasted_writes,
    warnings_in_range,
)
from dashboard.fleet.usage import (
    FleetCost,
    active_sessions,
    active_sessions_count,
    fleet_usage,
    fleet_window,
    sessions_outside,
    source_rows,
    span_params,
)
from dashboard.models import IngestJob
from dashboard.savings.shown import range_money
from dashboard.web.htmx import HtmxHttpRequest
from dashboard.web.money import usd
from dashboard.web.time_range import RANGE_LABELS, RANGES, range_name


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    """The fleet over one time range (``?range=24h|7d|30d|90d|all``, 30 days by default), read
    from the usage rollups; a range counts back from now, and the page says how many stored
    sessions it leaves out, with a link to the range that shows them."""
    chosen = range_name(request.GET.get("range"))
    window = fleet_window(chosen)
    usage = fleet_usage(window) if window is not None else None
    totals: dict[str, object] = dict.fromkeys(
        ("sessions", "events", "requests", "uncached", "read", "write", "output"), 0
    )
    # With no request in range, none reported a cache figure: unknown, as the hit rate is.
    totals.update(hit_rate=None, read=None, write=None, cost=usd(None))
    fleet_cost = FleetCost(total=None)
    sources = []
    active = active_sessions_count(window) if window is not None else None
    if usage is not None and active is not None:
        sources, fleet_cost = source_rows(usage, active)
        totals.update(
            sessions=active.sessions,
            events=active.events,
            requests=usage.total.requests,
            uncached=usage.total.uncached,
            read=usage.total.reported_read,
            write=usage.total.reported_write,
            output=usage.total.output,
            hit_rate=usage.total.hit_rate,
            cost=usd(fleet_cost.total),
        )
    context = {
        "range": chosen,
        "ranges": [(name, RANGE_LABELS[name]) for name in RANGES],
        "window": window,
        "outside": sessions_outside(window, active),
        # Appended to the links to the sessions list, which then lists the sessions the rows count.
        "window_query": urlencode(span_params(window.start, window.end)) if window is not None else "",
        "totals": totals,
        "fleet_cost": fleet_cost,
        "money": range_money(window) if window is not None else None,
        "sources": [(row, usd(row.cost)) for row in sources],
        # The sessions active in the range: a limited range leaves out those last active before it.
        "recent_sessions": active_sessions(window).select_related("source")[:8],
        # The newest stored, by id: sorting every warning by when it was last seen costs a scan.
        "recent_warnings": warnings_in_range(window).select_related("session").order_by("-id")[:5],
        "recent_jobs": IngestJob.objects.all()[:5],
        **fleet_cache_context(usage, active),
    }
    return render(request, "dashboard/overview.html", context)


@require_GET
@vary_on_headers("HX-Request")
def wasted_writes(request: HtmxHttpRequest) -> HttpResponse:
    """The sessions of the range whose cache writes were most often never read back.

    Their waste needs every request of each candidate in order, which costs more than the rest of
    the overview together, so the overview loads this panel on its own once it is in view (or by a
    link, without JavaScript).
    """
    chosen = range_name(request.GET.get("range"))
    window = fleet_window(chosen)
    template = "dashboard/overview_wasted.html" + ("#fleet-wasted" if request.htmx else "")
    active = active_sessions_count(window) if window is not None else None
    context = {
        "range": chosen,
        "window": window,
        "outside": sessions_outside(window, active),
        "wasters": top_wasted_writes(window) if window else [],
    }
    return render(request, template, context)
