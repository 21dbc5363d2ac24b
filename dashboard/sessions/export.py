"""CSV and JSON exports of the filtered sessions list, streamed so a fleet's list never sits in memory,
and one session's own JSON export with what each what-if scenario would save."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from dashboard.costs.session_costs import listed_sessions_priced, sessions_price_unpriced
from dashboard.models import Session
from dashboard.savings.refresh import session_savings
from dashboard.sessions.listing import SessionFilters
from dashboard.web.export_streams import stored_rows_export

EXPORT_COLUMNS = (
    "session_id",
    "parent_session_id",
    "source",
    "format",
    "title",
    "cwd",
    "started_at",
    "last_activity",
    "events",
    "requests",
    "input_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "output_tokens",
    "hit_rate",
    "warnings",
    "models",
    "cost_usd",
    "unpriced_requests",
)
CHUNK = 1000


def export_rows(filters: SessionFilters, sessions: QuerySet[Session]) -> Iterator[dict[str, Any]]:
    """Every one of ``sessions`` (the list's, in its order), one dict per row, a chunk at a time."""
    if filters.sort_field == "cost_usd":
        sessions_price_unpriced()  # so none sorts below $0 for want of having been priced
    chunk: list[Session] = []
    for session in sessions.iterator(chunk_size=CHUNK):
        chunk.append(session)
        if len(chunk) == CHUNK:
            yield from _rows(chunk)
            chunk = []
    yield from _rows(chunk)


def _rows(sessions: list[Session]) -> Iterator[dict[str, Any]]:
    listed_sessions_priced(sessions)
    for s in sessions:
        yield {
            "session_id": s.external_id,
            "parent_session_id": s.parent.external_id if s.parent else (s.parent_external_id or None),
            "source": s.source.name,
            "format": s.format,
            "title": s.title,
            "cwd": s.cwd,
            "started_at": s.started_at.isoformat() if s.started_at else None,
            "last_activity": s.last_activity.isoformat() if s.last_activity else None,
            "events": s.event_count,
            "requests": s.request_count,
            "input_tokens": s.uncached_input_tokens,
            "cache_creation_tokens": s.cache_write_tokens,
            "cache_read_tokens": s.cache_read_tokens,
            "output_tokens": s.output_tokens,
            "hit_rate": s.hit_rate,
            "warnings": s.warning_count,
            "models": s.models_list,
            # A JSON number, as every other figure: null where no request of the session has a price.
            "cost_usd": float(s.cost_usd) if s.cost_usd is not None else None,
            "unpriced_requests": s.unpriced_requests,
        }


@require_GET
def session_export(request: HttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    filters = SessionFilters.from_query(request.GET)
    return stored_rows_export(
        fmt=fmt,
        name="sessions",
        errors=filters.errors,
        columns=EXPORT_COLUMNS,
        listed=filters.ordered(Session.objects.select_related("source", "parent")),
        rows=lambda sessions: export_rows(filters, sessions),
    )


@require_GET
def session_json_export(request: HttpRequest, session_id: int) -> JsonResponse:
    """One session as the list's JSON export has it, with ``whatif``: one object per scenario, as
    ``manage.py whatif --json`` prints them (``whatif_error`` says why the list is empty, if it is)."""
    session = get_object_or_404(Session.objects.select_related("source", "parent", "analysis"), pk=session_id)
    (row,) = _rows([session])
    savings = session_savings(session=session)
    body = {**row, "whatif": savings.results, "whatif_error": savings.error or None}
    response = JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="cachescope-session-{session.pk}.json"'
    return response
