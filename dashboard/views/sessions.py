from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from dashboard.models import Event, Request, Session, Source
from dashboard.services.costs import session_cost_compute, sessions_cost_map, usd
from dashboard.views.analysis import session_analysis_context
from dashboard.views.projections import session_breakdown_context

SESSION_SORTS = {
    "activity": "last_activity",
    "started": "started_at",
    "source": "source__name",
    "title": "title",
    "events": "event_count",
    "requests": "request_count",
    "uncached": "uncached_input_tokens",
    "read": "cache_read_tokens",
    "write": "cache_write_tokens",
    "output": "output_tokens",
    "hit_rate": "hit_rate",
    "warnings": "warning_count",
}
SESSIONS_PER_PAGE = 50
EVENTS_PER_PAGE = 100


def _is_htmx(request: HttpRequest) -> bool:
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    return bool(htmx)


def sessions_page(params: QueryDict) -> dict[str, Any]:
    """The filtered, sorted page of sessions the list shows, with the filter values echoed back."""
    sessions = Session.objects.select_related("source", "parent")
    source = params.get("source", "")
    model = params.get("model", "")
    text = params.get("q", "")
    if source:
        sessions = sessions.filter(source__name=source)
    if model:
        sessions = sessions.filter(models_used__contains=model)
    sessions = sessions.search(text)
    sort = params.get("sort", "-activity")
    field = SESSION_SORTS.get(sort.lstrip("-"))
    if field is None:
        sort, field = "-activity", SESSION_SORTS["activity"]
    descending = sort.startswith("-")
    order = (f"-{field}" if descending else field, "-id" if descending else "id")
    sessions = sessions.order_by(*order)
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(params.get("page"))
    return {
        "page": page,
        "sort": sort,
        "filters": {"source": source, "model": model, "q": text},
        "sources": Source.objects.values_list("name", flat=True),
        "models": _known_models(),
    }


def _known_models() -> list[str]:
    return list(
        Request.objects.exclude(model="").order_by("model").values_list("model", flat=True).distinct()
    )


@require_GET
@vary_on_headers("HX-Request")
def session_list(request: HttpRequest) -> HttpResponse:
    template = "dashboard/session_list.html" + ("#session-table" if _is_htmx(request) else "")
    context = sessions_page(request.GET)
    page = context["page"]
    page.object_list = list(page.object_list)
    costs = sessions_cost_map(session_ids=[session.pk for session in page.object_list])
    for session in page.object_list:
        session.cost_display = usd(costs.get(session.pk))
    return render(request, template, context)


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("source", "parent"), pk=session_id)
    context = {
        "session": session,
        "children": session.children.select_related("source").order_by("started_at", "id"),
        "requests": session.requests.order_by("ordinal"),
        "warnings": session.warnings.select_related("request")[:50],
        "cost": session_cost_compute(session=session),
        **events_page(session, request.GET),
        **session_analysis_context(session),
        **session_breakdown_context(session),
    }
    return render(request, "dashboard/session_detail.html", context)


def events_page(session: Session, params: QueryDict) -> dict[str, Any]:
    events = Event.objects.filter(session=session).order_by("seq")
    event_type = params.get("type", "")
    if event_type:
        events = events.filter(type=event_type)
    types = Event.objects.filter(session=session).order_by("type").values_list("type", flat=True).distinct()
    return {
        "events": Paginator(events, EVENTS_PER_PAGE).get_page(params.get("page")),
        "event_type": event_type,
        "event_types": list(types),
    }


@require_GET
@vary_on_headers("HX-Request")
def session_events_hx(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=session_id)
    context = {"session": session, **events_page(session, request.GET)}
    return render(request, "dashboard/session_detail.html#event-timeline", context)
