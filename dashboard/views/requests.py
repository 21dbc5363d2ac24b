from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.models import Block, Request
from dashboard.models.requests import CHAIN_MAX_LENGTH
from dashboard.query_params import report_ignored, text_param
from dashboard.views.analysis import request_analysis_context
from dashboard.views.client_versions import known_client_versions
from dashboard.views.htmx import HtmxHttpRequest

REQUESTS_PER_PAGE = 100


@require_GET
@vary_on_headers("HX-Request")
def request_list(request: HtmxHttpRequest) -> HttpResponse:
    requests = Request.objects.select_related("session", "session__source").order_by("-started_at", "-id")
    errors: dict[str, str] = {}
    model = text_param(request.GET, "model", errors)
    if model:
        requests = requests.filter(model=model)
    client_version = text_param(request.GET, "client_version", errors)
    if client_version:
        requests = requests.filter(client_version=client_version)
    lineage = text_param(request.GET, "lineage", errors, max_length=CHAIN_MAX_LENGTH)
    if lineage:
        requests = requests.in_lineage(lineage)
    report_ignored(request, errors)
    page = Paginator(requests, REQUESTS_PER_PAGE).get_page(request.GET.get("page"))
    template = "dashboard/request_list.html" + ("#request-table" if request.htmx else "")
    context = {
        "page": page,
        "model": model,
        "client_version": client_version,
        "client_versions": known_client_versions(),
        "lineage": lineage,
    }
    return render(request, template, context)


@require_GET
def request_detail(request: HttpRequest, request_id: int) -> HttpResponse:
    call = get_object_or_404(Request.objects.select_related("session", "session__source"), pk=request_id)
    hashes = [unit[0] for unit in call.units]
    blocks = Block.objects.in_bulk(hashes)
    units = [
        {
            "hash": unit[0],
            "tier": unit[1],
            "role": unit[2],
            "message": unit[3],
            "index": unit[4],
            "block": blocks.get(unit[0]),
        }
        for unit in call.units
    ]
    siblings = Request.objects.filter(session=call.session_id)
    context = {
        "call": call,
        "units": units,
        "previous": siblings.filter(ordinal__lt=call.ordinal).order_by("-ordinal").first(),
        "next": siblings.filter(ordinal__gt=call.ordinal).order_by("ordinal").first(),
        **request_analysis_context(call),
    }
    return render(request, "dashboard/request_detail.html", context)
