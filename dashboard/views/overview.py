from __future__ import annotations

from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.models import IngestJob, Session, Source, Warning
from dashboard.services.costs import sources_cost_map, usd
from dashboard.views.fleet_cache import fleet_cache_context
from projections.hit_rate import hit_rate


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    totals = Session.objects.aggregate(
        sessions=Count("id"),
        events=Sum("event_count"),
        requests=Sum("request_count"),
        uncached=Sum("uncached_input_tokens"),
        read=Sum("cache_read_tokens"),
        write=Sum("cache_write_tokens"),
        output=Sum("output_tokens"),
        # A session's hit rate is null when it reported no cache figure (or had nothing to divide
        # by, when its sums are 0 anyway): the fleet reported one if any session has a rate.
        reporting=Count("hit_rate"),
    )
    reported = totals["reporting"] > 0
    totals["hit_rate"] = hit_rate(
        read=totals["read"] if reported else None,
        uncached=totals["uncached"],
        writes=totals["write"] if reported else None,
    )
    sources = Source.objects.annotate(
        session_total=Count("sessions"),
        request_total=Sum("sessions__request_count"),
        read_total=Sum("sessions__cache_read_tokens"),
        uncached_total=Sum("sessions__uncached_input_tokens"),
        write_total=Sum("sessions__cache_write_tokens"),
    ).order_by("name")
    costs = sources_cost_map()
    totals["cost"] = usd(sum(costs.values())) if costs else usd(None)
    for source in sources:  # fills the queryset's cache, which the page then iterates
        source.cost_display = usd(costs.get(source.pk))
    context = {
        "totals": totals,
        "sources": sources,
        "recent_sessions": Session.objects.select_related("source")[:8],
        "recent_warnings": Warning.objects.select_related("session")[:5],
        "recent_jobs": IngestJob.objects.all()[:5],
        **fleet_cache_context(),
    }
    return render(request, "dashboard/overview.html", context)
