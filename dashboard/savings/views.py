"""The savings page: what a fix would save, ranked by source, client version, model and miss cause
in a time range, with the sessions behind each, and its CSV and JSON export."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.savings.page import (
    EXPORT_COLUMNS,
    SCENARIOS_OFFERED,
    SavingsQuery,
    drill_down,
    export_rows,
    range_sessions,
    rankings,
)
from dashboard.web.export_streams import export_response
from dashboard.web.time_range import RANGE_LABELS, RANGES, range_name


@require_GET
def savings(request: HttpRequest) -> HttpResponse:
    """``?range=`` as the overview reads it, ``scenario`` (default ``best``), and ``by`` with
    ``name`` to list the sessions behind one row."""
    errors: dict[str, str] = {}
    query = SavingsQuery.from_query(
        range_name=range_name(request.GET.get("range")), params=request.GET, errors=errors
    )
    window, sessions = range_sessions(query.range)
    context = {
        "query": query,
        "range": query.range,
        "ranges": [(name, RANGE_LABELS[name]) for name in RANGES],
        "window": window,
        "scenarios": SCENARIOS_OFFERED,
        "rankings": rankings(query, window, sessions),
        "drilled": drill_down(query, sessions),
        "errors": errors,
    }
    return render(request, "dashboard/savings.html", context, status=400 if errors else 200)


@require_GET
def savings_export(request: HttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """The page's figures as CSV or JSON: each ranking's rows, or the drill-down's sessions."""
    errors: dict[str, str] = {}
    query = SavingsQuery.from_query(
        range_name=range_name(request.GET.get("range")), params=request.GET, errors=errors
    )
    window, sessions = range_sessions(query.range)
    return export_response(
        fmt=fmt,
        name="savings",
        errors=errors,
        columns=EXPORT_COLUMNS,
        rows=lambda: export_rows(query, window, sessions),
    )
