from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.models import Session, Source, Warning
from dashboard.query_params import choice_param, id_param, report_ignored, text_param
from dashboard.views.htmx import HtmxHttpRequest


@require_GET
@vary_on_headers("HX-Request")
def warning_list(request: HtmxHttpRequest) -> HttpResponse:
    warnings = Warning.objects.select_related("session", "session__source", "request")
    errors: dict[str, str] = {}
    kind = choice_param(request.GET, "kind", set(Warning.Kind.values), errors)
    if kind:
        warnings = warnings.filter(kind=kind)
    source = text_param(request.GET, "source", errors)
    if source:
        warnings = warnings.filter(session__source__name=source)
    session = _session_filter(id_param(request.GET, "session", errors))
    if session is not None:
        warnings = warnings.filter(session=session)
    report_ignored(request, errors)
    warnings = warnings.order_by("-last_seen", "-id")
    page = Paginator(warnings, 100).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "kind": kind,
        "kinds": Warning.Kind.choices,
        "source": source,
        "sources": Source.objects.order_by("name").values_list("name", flat=True),
        "session_filter": session,
    }
    template = "dashboard/warning_list.html" + ("#warning-table" if request.htmx else "")
    return render(request, template, context)


def _session_filter(session_id: int | None) -> Session | None:
    """The session named by the ``session`` parameter (its id); ``None`` when absent or unknown."""
    if session_id is None:
        return None
    return Session.objects.filter(pk=session_id).first()
