"""Report rows for scripts: one dict per session with its token totals."""

from __future__ import annotations

from typing import Any

from dashboard.models import Session


def session_report(*, source: str | None = None) -> list[dict[str, Any]]:
    """Per-session totals, from the summary columns the ingest keeps."""
    sessions = Session.objects.select_related("source", "parent").order_by("source__name", "started_at", "id")
    if source:
        sessions = sessions.filter(source__name=source)
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
        }
        for s in sessions
    ]
