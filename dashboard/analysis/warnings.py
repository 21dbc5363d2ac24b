"""Storing what a session's analysis found: its warnings, with what each puts at stake and when it
happened, and the host's own notes about its cache, which are kept apart from the warnings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from dashboard.analysis.warning_stakes import RequestFacts, cost_at_stake, tokens_at_stake
from dashboard.costs.pricing import Price, prices_load
from dashboard.models import Event, HostNote, Request, Session, Warning
from projections.cache.results import CLIENT_RECORD_PLACE, RecordsAnalysis
from projections.cache.results import HostNote as HostNoteRecord

ANALYSIS_KINDS = (
    Warning.Kind.RENDER_MISMATCH,
    Warning.Kind.OVER_CREDIT,
    Warning.Kind.UNEXPLAINED_MISS,
    Warning.Kind.MODEL_ERROR,
    Warning.Kind.MARKER_LIMIT,
    Warning.Kind.PROVIDER_DISAGREES,
)
"""The kinds the analysis owns: a new analysis of a session replaces its warnings of these kinds."""
WRITE_BATCH = 500


def event_times(*, session_id: int, seqs: Iterable[int]) -> dict[int, datetime | None]:
    """The time each of ``seqs`` happened in the session's log, in one query."""
    wanted = set(seqs)
    if not wanted:
        return {}
    rows = Event.objects.filter(session_id=session_id, seq__in=wanted).values_list("seq", "time")
    return dict(rows)


def warnings_store(
    *,
    session: Session,
    result: RecordsAnalysis,
    requests: Mapping[str, Request],
    prices: Sequence[Price] | None = None,
) -> bool:
    """Keep one Warning row per (kind, place) with the number of requests that showed it; whether
    a row was added or removed, which changes the session's count of warnings.

    Rows the analysis wrote before and no longer finds are removed; a row found again keeps its
    first-seen time. The row links the first request that showed it, dates itself by that request's
    start (or its event's time) and carries what that request puts at stake, priced by ``prices``
    (the price table, read here when not given).
    """
    grouped: dict[tuple[str, str], tuple[int, int]] = {}  # (kind, place) -> (first finding, count)
    for index, finding in enumerate(result.findings):
        key = (finding.kind, finding.place[:300])
        seen = grouped.get(key)
        grouped[key] = (index, 1) if seen is None else (seen[0], seen[1] + 1)
    owned = Warning.objects.filter(session=session).filter(kind__in=ANALYSIS_KINDS) | Warning.objects.filter(
        session=session, kind=Warning.Kind.INGEST_ERROR, place__startswith=CLIENT_RECORD_PLACE
    )
    existing = {(w.kind, w.place): w for w in owned}
    stale = [w.pk for key, w in existing.items() if key not in grouped]
    Warning.objects.filter(pk__in=stale).delete()
    analyses = {r.key: r.data for r in result.results}
    times = event_times(session_id=session.pk, seqs=(f.seq for f in result.findings if f.seq is not None))
    new: list[Warning] = []
    for (kind, place), (index, count) in grouped.items():
        finding = result.findings[index]
        request = requests.get(finding.request_key) if finding.request_key else None
        if request is not None and prices is None:
            prices = prices_load()  # only a warning about a request has a cost at stake
        values = {
            "request": request,
            "message": finding.message,
            "count": count,
            "seq": finding.seq,
            "happened_at": request.started_at if request is not None else times.get(finding.seq or -1),
            **_stakes(kind, request, analyses.get(request.key) if request else None, prices or ()),
        }
        row = existing.get((kind, place))
        if row is None:
            row = Warning(session=session, kind=kind, place=place, **values)
            new.append(row)
        elif any(getattr(row, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(row, name, value)
            row.save(update_fields=[*values, "last_seen"])
    # One insert for the rows found for the first time: a session's first analysis finds them all.
    Warning.objects.bulk_create(new, batch_size=WRITE_BATCH)
    return bool(new or stale)


def _stakes(
    kind: str, request: Request | None, analysis: Mapping[str, object] | None, prices: Sequence[Price]
) -> dict[str, int | Decimal | None]:
    if request is None:
        return {"tokens_at_stake": 0, "cost_at_stake": Decimal(0)}
    facts = RequestFacts.of(
        model=request.model,
        usage=(
            request.uncached_input_tokens,
            request.cache_read_tokens,
            request.cache_write_5m_tokens,
            request.cache_write_1h_tokens,
        ),
        analysis=analysis,
    )
    tokens = tokens_at_stake(kind, facts)
    return {"tokens_at_stake": tokens, "cost_at_stake": cost_at_stake(tokens, facts, prices)}


def host_notes_store(
    *, session: Session, notes: Iterable[HostNoteRecord], requests: Mapping[str, Request]
) -> int:
    """Replace the session's host notes with ``notes``; the number stored."""
    rows = [
        HostNote(
            session=session,
            request=requests.get(note.request_key) if note.request_key else None,
            seq=note.seq,
            time=note.time,
            level=note.level[:20],
            line=note.line,
        )
        for note in notes
    ]
    HostNote.objects.filter(session=session).delete()
    HostNote.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    return len(rows)


def warning_stakes_refresh(*, session_ids: Sequence[int], prices: Sequence[Price]) -> int:
    """Figure again what each warning of ``session_ids`` about a request puts at stake; how many.

    Stakes are priced when an analysis stores its warnings, so a price change, or warnings stored
    before stakes existed, leave them stale until this runs (``manage.py refresh_request_figures``).
    """
    warnings = list(
        Warning.objects.filter(session_id__in=session_ids, request__isnull=False).select_related(
            "request", "request__analysis"
        )
    )
    for warning in warnings:
        analysis = getattr(warning.request, "analysis", None)
        data = analysis.data if analysis is not None and isinstance(analysis.data, dict) else None
        for name, value in _stakes(warning.kind, warning.request, data, prices).items():
            setattr(warning, name, value)
    Warning.objects.bulk_update(warnings, ["tokens_at_stake", "cost_at_stake"], batch_size=WRITE_BATCH)
    return len(warnings)
