from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.analysis.views import request_analysis_context
from dashboard.fleet.client_versions import known_client_versions
from dashboard.models import Block, Request, Source
from dashboard.requests.listing import CAUSES, LABELS, RequestFilters
from dashboard.savings.request_fixes import request_fixes
from dashboard.sessions.views import known_models
from dashboard.web.htmx import HtmxHttpRequest
from dashboard.web.money import usd
from projections.cache.explain.verdict import label_meaning

REQUESTS_PER_PAGE = 100
LISTED_REQUESTS_CAP = 10_000
"""The most matches the list pages through: counting a fleet's million requests, or skipping to
the last of its pages, would take seconds. The exports hold every match."""
LISTED_REQUEST_FIELDS_SKIPPED = ("params", "units", "markers", "render_warnings", "usage_raw")
"""What the list never shows and is the bulk of a row: a body's units and markers."""


class CappedPaginator(Paginator):  # type: ignore[type-arg]
    """A paginator over at most :data:`LISTED_REQUESTS_CAP` rows, counted without reading the rest:
    ``capped`` says more matched.

    ``object_list`` only sorts and filters; a page takes its ids from it, then reads those rows from
    ``rows`` with what the list shows of them. Read in one go, a deep page joined its session,
    source and analysis to every row it skipped (a hundred pages in, 9,900 of them).
    """

    capped = False

    def __init__(self, object_list: QuerySet[Request], per_page: int, *, rows: QuerySet[Request]) -> None:
        super().__init__(object_list, per_page)
        self.rows = rows

    @cached_property
    def count(self) -> int:
        found = self.object_list.order_by()[: LISTED_REQUESTS_CAP + 1].count()
        self.capped = found > LISTED_REQUESTS_CAP
        return min(found, LISTED_REQUESTS_CAP)

    def page(self, number: int | str) -> Page:  # type: ignore[type-arg]
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.count)
        ids = list(self.object_list.values_list("pk", flat=True)[bottom:top])
        found = self.rows.in_bulk(ids)
        return self._get_page([found[pk] for pk in ids if pk in found], number, self)


def listed_requests() -> QuerySet[Request]:
    """Every request with what a list row shows of it: its session and source, and the stored
    analysis's columns (``None`` while the request is not analysed)."""
    return (
        Request.objects.select_related("session", "session__source")
        .defer(*LISTED_REQUEST_FIELDS_SKIPPED)
        .annotate(
            analysis_id=F("analysis__id"),
            miss_label=F("analysis__label"),
            miss_cause=F("analysis__cause"),
            predicted_read=F("analysis__predicted_read"),
            predicted_write=F("analysis__predicted_write"),
            reprocessed_tokens=F("analysis__wasted_tokens"),
            cost=F("analysis__cost"),
        )
    )


def requests_page(params: QueryDict) -> dict[str, Any]:
    """The filtered, sorted page of requests the list shows, with the filters echoed back."""
    filters = RequestFilters.from_query(params)
    paginator = CappedPaginator(
        filters.ordered(Request.objects.all()), REQUESTS_PER_PAGE, rows=listed_requests()
    )
    page = paginator.get_page(params.get("page"))
    for call in page:
        call.cost_display = usd(call.cost)
        call.label_meaning = label_meaning(call.miss_label)
    return {
        "page": page,
        "left_out": filters.left_out(Request.objects.all(), cap=LISTED_REQUESTS_CAP),
        "cap": LISTED_REQUESTS_CAP,
        "filters": filters,
        "sort": filters.sort,
        "sources": Source.objects.order_by("name").values_list("name", flat=True),
        "models": known_models(),
        "client_versions": known_client_versions(),
        "labels": sorted(LABELS),
        "causes": sorted(CAUSES),
    }


@require_GET
@vary_on_headers("HX-Request")
def request_list(request: HtmxHttpRequest) -> HttpResponse:
    template = "dashboard/request_list.html" + ("#request-table" if request.htmx else "")
    return render(request, template, requests_page(request.GET))


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
        "fixes": request_fixes(call),
        **request_analysis_context(call),
    }
    return render(request, "dashboard/request_detail.html", context)
