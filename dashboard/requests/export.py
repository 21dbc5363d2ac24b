"""CSV and JSON exports of the filtered requests list, streamed so a fleet's requests never sit in
memory; the same parse of the query string as the page, so the export holds exactly the list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from dashboard.models import Request
from dashboard.requests.listing import RequestFilters
from dashboard.requests.views import listed_requests
from dashboard.web.export_streams import stored_rows_export

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


def export_rows(requests: QuerySet[Request]) -> Iterator[dict[str, Any]]:
    """Every one of ``requests`` (the list's, in its order), one dict per row.

    ``label`` and ``cause`` are ``None`` for a request not analysed yet, ``""`` for one analysed
    with no miss or no change.
    """
    for call in requests.iterator(chunk_size=CHUNK):
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
    return stored_rows_export(
        fmt=fmt,
        name="requests",
        errors=filters.errors,
        columns=EXPORT_COLUMNS,
        listed=filters.ordered(listed_requests()),
        rows=export_rows,
    )
