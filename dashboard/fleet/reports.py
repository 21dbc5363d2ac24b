"""Report rows for scripts: one dict per session with its token totals and its cost."""

from __future__ import annotations

from typing import Any

from dashboard.costs.pricing import prices_load
from dashboard.costs.session_costs import listed_sessions_priced, unpriced_models
from dashboard.models import Session


def session_report(*, source: str | None = None) -> list[dict[str, Any]]:
    """Per-session totals, from the summary columns the ingest keeps, and the cost at the prices of
    the table as a number (``None`` only where no request of the session has a price, which
    ``unpriced_models`` then names)."""
    query = Session.objects.select_related("source", "parent").order_by("source__name", "started_at", "id")
    if source:
        query = query.filter(source__name=source)
    sessions = list(query)
    listed_sessions_priced(sessions)
    prices = prices_load()
    return [
        {
            "session_id": s.external_id,
            "parent_session_id": s.parent.external_id if s.parent else (s.parent_external_id or None),
            "source": s.source.name,
            "format": s.format,
            "requests": s.request_count,
            "input_tokens": s.uncached_input_tokens,
            "output_tokens": s.output_tokens,
            "cache_creation_tokens": s.cache_write_tokens,
            "cache_read_tokens": s.cache_read_tokens,
            "models": s.models_list,
            "cost_usd": float(s.cost_usd) if s.cost_usd is not None else None,
            "unpriced_requests": s.unpriced_requests,
            "unpriced_models": unpriced_models(s, prices) if s.unpriced_requests else [],
        }
        for s in sessions
    ]
