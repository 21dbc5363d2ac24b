"""Give requests stored before ingest priced their context the figures ingest now stores.

Ingest keeps, per request, the seq of the event that answers it and its system, tools and messages
priced from its body (:mod:`projections.context_series`). A request stored earlier has neither, and
its session page would fall back to the log alone. This finds the answering event by the keys the
importers give their calls, rebuilds the body from the stored units, and prices it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import transaction

from dashboard.analysis.stored_requests import block_raws, stored_record, stored_record_usage_only
from dashboard.models import Event, Request, Session
from dashboard.sessions.breakdown_series import series_cache_key
from projections.cache.render.rebuild import StoredRequestError
from projections.context_series import ANSWERING_TYPES, answered_keys, request_figures
from projections.normalized import JSON
from projections.prices import PriceError
from projections.providers.model_windows import host_of_format

REQUEST_BATCH = 200
FIGURE_FIELDS = ("event_seq", "system_tokens", "tools_tokens", "message_tokens", "context_window")


@dataclass
class BackfillSummary:
    """What a backfill did."""

    sessions: int = 0
    requests: int = 0
    unmatched: int = 0
    """Requests whose answering event was not found (they keep a null seq)."""
    errors: list[str] = field(default_factory=list)


def context_backfill(*, session_ids: list[int] | None = None) -> BackfillSummary:
    """Fill the context figures of every request stored without them, session by session."""
    summary = BackfillSummary()
    pending = Request.objects.filter(event_seq__isnull=True)
    if session_ids is not None:
        pending = pending.filter(session_id__in=session_ids)
    for session_id in pending.values_list("session_id", flat=True).distinct().order_by("session_id"):
        session_context_backfill(session_id=session_id, summary=summary)
    return summary


def session_context_backfill(*, session_id: int, summary: BackfillSummary) -> None:
    """Fill one session's requests, in batches, each batch in one transaction."""
    seq_by_key: dict[str, int] = {}
    answering = Event.objects.filter(session_id=session_id, type__in=ANSWERING_TYPES).order_by("seq")
    for seq, event_type, data in answering.values_list("seq", "type", "data").iterator():
        for key in answered_keys(seq, event_type, data or {}):
            seq_by_key.setdefault(key, seq)
    ids = list(
        Request.objects.filter(session_id=session_id, event_seq__isnull=True)
        .order_by("ordinal")
        .values_list("pk", flat=True)
    )
    session = Session.objects.filter(pk=session_id).first()
    host = host_of_format(session.format) if session is not None else None
    for start in range(0, len(ids), REQUEST_BATCH):
        rows = list(Request.objects.filter(pk__in=ids[start : start + REQUEST_BATCH]))
        raws = block_raws(unit[0] for row in rows if row.has_body for unit in row.units)
        for row in rows:
            _fill(row, seq_by_key, raws, summary, host)
        with transaction.atomic():
            Request.objects.bulk_update(rows, FIGURE_FIELDS)
    summary.sessions += 1
    if session is not None:
        cache.delete(series_cache_key(session))


def _fill(
    row: Request,
    seq_by_key: dict[str, int],
    raws: Mapping[str, JSON],
    summary: BackfillSummary,
    host: str | None,
) -> None:
    row.event_seq = seq_by_key.get(row.key)
    if row.event_seq is None:
        summary.unmatched += 1
    try:
        record = stored_record(row, raws) if row.has_body else stored_record_usage_only(row)
        figures = request_figures(record, host=host)
    except (StoredRequestError, PriceError) as error:
        summary.errors.append(f"request {row.pk} ({row.key}): {error}")
        return
    row.context_window = figures.context_window
    if figures.breakdown is not None:
        row.system_tokens = figures.breakdown.system_tokens
        row.tools_tokens = figures.breakdown.tools_tokens
        row.message_tokens = figures.breakdown.message_tokens
    summary.requests += 1
