from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.models import Warning
from dashboard.views.sessions import _is_htmx


@require_GET
@vary_on_headers("HX-Request")
def warning_list(request: HttpRequest) -> HttpResponse:
    warnings = Warning.objects.select_related("session", "session__source", "request")
    kind = request.GET.get("kind", "")
    if kind:
        warnings = warnings.filter(kind=kind)
    page = Paginator(warnings, 100).get_page(request.GET.get("page"))
    context = {"page": page, "kind": kind, "kinds": Warning.Kind.choices}
    template = "dashboard/warning_list.html" + ("#warning-table" if _is_htmx(request) else "")
    return render(request, template, context)
