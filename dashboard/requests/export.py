"""CSV and JSON exports of the filtered requests list, streamed so a fleet's requests never sit in
memory; the same parse of the query string as the page, so the export holds exactly the list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Max, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from dashboard.models import Request
from dashboard.requests.listing import RequestFilters
from dashboard.requests.views import listed_requests
from dashboard.web.export_streams import export_response

EXPORT_COLUMNS = (
    "request_id",
    "session_id",
    "source",
    "number",
    "lineage",
    "model",
    "client_version",
    "started_at",
    "label",
    "cause",
    "input_tokens",
    "cache_read_tokens",
    "predicted_read_tokens",
    "cache_creation_5m_tokens",
    "cache_creation_1h_tokens",
    "predicted_write_tokens",
    "output_tokens",
    "reprocessed_tokens",
    "cost_usd",
)
CHUNK = 1000


def exported(filters: RequestFilters, *, up_to: int | None = None) -> QuerySet[Request]:
    """The requests the filters select, in the list's order; only those stored by ``up_to`` (an
    id), so the count sent first and the rows sent after it agree while ingests go on."""
    requests = filters.ordered(listed_requests())
    return requests if up_to is None else requests.filter(pk__lte=up_to)


def export_rows(filters: RequestFilters, *, up_to: int | None = None) -> Iterator[dict[str, Any]]:
    """Every request the filters select, in the list's order, one dict per row.

    ``label`` and ``cause`` are ``None`` for a request not analysed yet, ``""`` for one analysed
    with no miss or no change.
    """
    for call in exported(filters, up_to=up_to).iterator(chunk_size=CHUNK):
        session = call.session
        yield {
            "request_id": call.pk,
            "session_id": session.external_id,
            "source": session.source.name,
            "number": call.number,
            "lineage": call.current_lineage,
            "model": call.model,
            "client_version": call.client_version,
            "started_at": call.started_at.isoformat() if call.started_at else None,
            "label": call.miss_label,
            "cause": call.miss_cause,
            "input_tokens": call.uncached_input_tokens,
            "cache_read_tokens": call.cache_read_tokens,
            "predicted_read_tokens": call.predicted_read,
            "cache_creation_5m_tokens": call.cache_write_5m_tokens,
            "cache_creation_1h_tokens": call.cache_write_1h_tokens,
            "predicted_write_tokens": call.predicted_write,
            "output_tokens": call.output_tokens,
            "reprocessed_tokens": call.reprocessed_tokens,
            "cost_usd": float(call.cost) if call.cost is not None else None,
        }


@require_GET
def request_export(request: HttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    filters = RequestFilters.from_query(request.GET)
    up_to = Request.objects.aggregate(last=Max("pk"))["last"] or 0
    return export_response(
        fmt=fmt,
        name="requests",
        errors=filters.errors,
        columns=EXPORT_COLUMNS,
        rows=lambda: export_rows(filters, up_to=up_to),
        count=lambda: exported(filters, up_to=up_to).order_by().count(),
    )
