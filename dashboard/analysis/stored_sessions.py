"""Cache analysis of stored sessions: load a session's requests and client records, run the engine's
analysis over them, and store the results and warnings; queue and claim analysis jobs.

The analysis itself (rebuilding a request's body from its blocks, the lineage and transcript
analyses, labels and remedies) is the engine's, in :mod:`projections.cache`; this module only moves
rows in and out of the database. That includes what other sessions of the same source wrote inside
the TTL window, read in one query per analysed session (see :func:`foreign_writes`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from django.db import DatabaseError, OperationalError, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from dashboard.analysis.request_figures import figure_inputs, request_figures
from dashboard.analysis.session_warnings import sessions_refresh_warning_count
from dashboard.analysis.stored_requests import StoredBodies, stored_record_usage_only
from dashboard.analysis.warnings import host_notes_store, warnings_store
from dashboard.costs.ledger import cost_ledger
from dashboard.costs.pricing import Price, prices_load, stored_calls
from dashboard.costs.session_costs import analysis_stamp, ledgers_store, session_key
from dashboard.jobs.leases import lease_seconds
from dashboard.models import Event, Request, RequestAnalysis, Session, SessionAnalysis
from dashboard.models.requests import CHAIN_MAX_LENGTH
from dashboard.storage.copy_rows import insert_rows
from dashboard.storage.gc_pause import gc_paused
from projections.cache.cross_session import (
    WINDOW,
    PrefixIndex,
    WriterRef,
    marker_writes,
    transcript_writes,
)
from projections.cache.results import RecordsAnalysis
from projections.cache.session_analysis import CLIENT_RECORD_TYPES, analyse_records, start_order
from projections.cache.transcript_analysis import is_boundary
from projections.normalized import EventRecord

WRITE_BATCH = 500
BODY_FIELDS = ("units", "markers", "params", "render_warnings")
"""What a request row keeps of its body: large for a long conversation, and read only to rebuild it."""


# --- what other sessions left cached ------------------------------------------------------------


def foreign_writes(session: Session, rows: Sequence[Request]) -> PrefixIndex:
    """What the other sessions of ``session``'s source left cached from one TTL window before its
    first request to its last: their markers' prefixes where their analysis recorded them, else the
    sizes their usage shows. One query, whatever the number of sessions.

    A body session's prefixes are known once that session was analysed; a transcript's sizes as
    soon as it was ingested.
    """
    times = [row.started_at for row in rows if row.started_at is not None]
    if not times:
        return PrefixIndex()
    others = (
        Request.objects.filter(
            session__source_id=session.source_id,
            started_at__gte=min(times) - WINDOW,
            started_at__lte=max(times),
        )
        .exclude(session_id=session.pk)
        .values_list(
            "session_id",
            "key",
            "ordinal",
            "model",
            "started_at",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "analysis__data__record",
        )
    )
    writes = []
    for session_id, key, ordinal, model, started, read, write_5m, write_1h, record in others.iterator():
        writer = WriterRef(str(session_id), key, ordinal)
        hashed = marker_writes(writer, model, started, record if isinstance(record, list) else [])
        writes.extend(hashed or transcript_writes(writer, model, started, read, write_5m, write_1h))
    return PrefixIndex.of(writes)


# --- the stored session ------------------------------------------------------------------------


def analysis_request(*, session_id: int) -> bool:
    """Mark ``session_id``'s analysis as wanted; True when a task should be sent to run it."""
    return bool(analyses_request(session_ids=[session_id]))


def analyses_request(*, session_ids: Sequence[int]) -> list[int]:
    """Mark the analyses of ``session_ids`` as wanted, in one transaction; the ids of those still
    stored, for which a task should be sent."""
    now = timezone.now()
    with transaction.atomic():
        SessionAnalysis.objects.filter(session_id__in=session_ids).update(
            status=SessionAnalysis.Status.QUEUED,
            requested_at=now,
            claimed_by="",
            generation=F("generation") + 1,
        )
        asked = set(
            SessionAnalysis.objects.filter(session_id__in=session_ids).values_list("session_id", flat=True)
        )
        stored = set(Session.objects.filter(pk__in=session_ids).values_list("pk", flat=True))
        # A row another request inserted meanwhile is queued as this one would be.
        first = [SessionAnalysis(session_id=pk, requested_at=now, generation=1) for pk in stored - asked]
        SessionAnalysis.objects.bulk_create(first, ignore_conflicts=True)
    return [pk for pk in session_ids if pk in stored]


def analysis_claim(*, session_id: int, owner: str) -> bool:
    """Lease the analysis of ``session_id`` to ``owner``: a queued one, or a running one whose lease
    ran out (its worker died); ``False`` otherwise, even for a second delivery of the same task."""
    return bool(analyses_claim(session_ids=[session_id], owner=owner))


def analyses_claim(*, session_ids: Sequence[int], owner: str) -> list[int]:
    """:func:`analysis_claim` for several sessions in one UPDATE; the ids claimed, in the order given."""
    now = timezone.now()
    lapsed = Q(status=SessionAnalysis.Status.RUNNING) & (Q(lease_until__lt=now) | Q(lease_until__isnull=True))
    # The progress's total in the same UPDATE: on PostgreSQL a commit of its own costs a WAL flush.
    total = Request.objects.filter(session_id=OuterRef("session_id")).order_by().values("session_id")
    claimed = SessionAnalysis.objects.filter(
        Q(status=SessionAnalysis.Status.QUEUED) | lapsed, session_id__in=session_ids
    ).update(
        status=SessionAnalysis.Status.RUNNING,
        claimed_by=owner[:200],
        started_at=now,
        lease_until=now + timedelta(seconds=lease_seconds()),
        requests_total=Coalesce(Subquery(total.annotate(n=Count("pk")).values("n")), 0),
        requests_done=0,
    )
    if not claimed:
        return []
    # A lease is the owner's alone (a task id with the worker's), so the claimed rows are these.
    mine = SessionAnalysis.objects.filter(
        session_id__in=session_ids, claimed_by=owner[:200], started_at=now
    ).values_list("session_id", flat=True)
    held = set(mine)
    return [pk for pk in dict.fromkeys(session_ids) if pk in held]


def analysis_renew(*, session_id: int, owner: str) -> bool:
    """Extend ``owner``'s lease on a running analysis; ``False`` once it is no longer theirs."""
    return analyses_renew(session_ids=[session_id], owner=owner)


def analyses_renew(*, session_ids: Sequence[int], owner: str) -> bool:
    """Extend ``owner``'s leases on the running analyses of ``session_ids``; ``False`` once none is
    theirs (each is done, or was taken over)."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    held = SessionAnalysis.objects.filter(
        session_id__in=session_ids, claimed_by=owner[:200], status=SessionAnalysis.Status.RUNNING
    )
    return bool(held.update(lease_until=until))


def analyses_release_lapsed() -> list[int]:
    """Queue again the analyses whose worker's lease ran out; the session ids, for the caller to enqueue."""
    now = timezone.now()
    released = []
    lapsed = SessionAnalysis.objects.filter(status=SessionAnalysis.Status.RUNNING, lease_until__lt=now)
    for session_id in lapsed.values_list("session_id", flat=True):
        again = SessionAnalysis.objects.filter(
            session_id=session_id, status=SessionAnalysis.Status.RUNNING, lease_until__lt=now
        )
        if again.update(status=SessionAnalysis.Status.QUEUED, claimed_by="", lease_until=None):
            released.append(session_id)
    return released


def session_analyse(
    *, session_id: int, owner: str = "", prices: list[Price] | None = None
) -> RecordsAnalysis:
    """Analyse every request of a stored session and store the results and warnings.

    With ``owner`` (a claimed job) the job's progress and end are recorded on its row; a job
    re-queued by a newer ingest while this one ran still stores what it read (see :func:`_store`)
    and is left queued for the next task. ``prices``: the price table, when the caller read it.
    """
    with gc_paused():
        return _session_analyse(session_id, owner, prices_load() if prices is None else prices)


def sessions_analyse(*, session_ids: Sequence[int], owner: str = "") -> None:
    """:func:`session_analyse` for each of ``session_ids`` in turn, with the price table read once.

    A session whose analysis fails is recorded as failed and the others are still analysed; the
    first such error is raised at the end. A database that cannot be reached stops them all at once,
    and ``owner``'s claims on those not yet analysed are queued again for the task's retry.
    """
    prices = prices_load()
    failed: Exception | None = None
    for index, session_id in enumerate(session_ids):
        try:
            session_analyse(session_id=session_id, owner=owner, prices=prices)
        except OperationalError:
            if owner:
                _release(session_ids[index + 1 :], owner)
            raise
        except Exception as error:
            failed = failed or error
    if failed is not None:
        raise failed


def _release(session_ids: Sequence[int], owner: str) -> None:
    """Queue again ``owner``'s claims on ``session_ids``, so another task (or a retry, under an owner
    of its own) claims them at once rather than once their lease runs out; the lease is what is left
    should the database still be away."""
    with contextlib.suppress(DatabaseError):
        SessionAnalysis.objects.filter(
            session_id__in=list(session_ids), claimed_by=owner[:200], status=SessionAnalysis.Status.RUNNING
        ).update(status=SessionAnalysis.Status.QUEUED, claimed_by="", lease_until=None)


def _session_analyse(session_id: int, owner: str, prices: list[Price]) -> RecordsAnalysis:
    # The generation with the session, read before the rows: every ingest counted by now has
    # committed, so the rows read below hold at least what this generation asked to analyse.
    generation = SessionAnalysis.objects.filter(session_id=OuterRef("pk")).values("generation")[:1]
    session = Session.objects.annotate(analysis_generation=Subquery(generation)).get(pk=session_id)
    read_generation: int = getattr(session, "analysis_generation", None) or 0
    # The rows without their bodies' units: those are read a batch at a time as the analysis walks
    # the session (see StoredBodies), so a long conversation is never held whole.
    rows = list(Request.objects.filter(session=session).order_by("ordinal").defer(*BODY_FIELDS))
    try:
        records = [stored_record_usage_only(row) for row in rows]
        order = [record.key for record in sorted(records, key=start_order)]
        bodies = StoredBodies(rows, order)
        events = analysed_events(session)
        result = analyse_records(records, events, bodies=bodies, foreign=foreign_writes(session, rows))
        _store(session, rows, result, read_generation, owner, prices)
    except Exception as error:
        if owner:
            SessionAnalysis.objects.filter(session_id=session_id, claimed_by=owner).update(
                status=SessionAnalysis.Status.FAILED,
                finished_at=timezone.now(),
                message=f"{type(error).__name__}: {error}",
            )
        raise
    return result


def analysed_events(session: Session) -> list[EventRecord]:
    """The events the analysis reads, in one query: the client's own records of its cache, then the
    compactions and rewrites of the prompt's head that the transcript predictor must know of."""
    stored = (
        Event.objects.filter(session=session)
        .filter(
            Q(type__in=CLIENT_RECORD_TYPES)
            | Q(type__startswith="compaction/")
            | Q(type__in=("system/message", "request/header"))
        )
        .order_by("seq")
        .values_list("seq", "type", "time", "data", "surface_op")
    )
    records: list[EventRecord] = []
    boundaries: list[EventRecord] = []
    for seq, type_, time, data, surface_op in stored:
        if type_ in CLIENT_RECORD_TYPES:
            records.append(EventRecord(seq=seq, type=type_, time=time, data=data))
            continue
        event = EventRecord(seq=seq, type=type_, time=time, data=data, surface_op=surface_op)
        if is_boundary(event):
            boundaries.append(event)
    return records + boundaries


def _done(
    session: Session, rows: Sequence[Request], result: RecordsAnalysis, owner: str, finished: datetime
) -> None:
    """Record the job's end; a claimed job re-queued by a newer ingest meanwhile is left queued."""
    if owner:
        SessionAnalysis.objects.filter(
            session=session, claimed_by=owner, status=SessionAnalysis.Status.RUNNING
        ).update(
            status=SessionAnalysis.Status.DONE,
            finished_at=finished,
            requests_total=len(rows),
            requests_done=len(rows),
            unmatched_records=result.unmatched_records,
            message="",
        )
    else:
        SessionAnalysis.objects.update_or_create(
            session=session,
            defaults={
                "status": SessionAnalysis.Status.DONE,
                "finished_at": finished,
                "requests_total": len(rows),
                "requests_done": len(rows),
                "unmatched_records": result.unmatched_records,
                "message": "",
            },
        )


def _store(
    session: Session,
    rows: Sequence[Request],
    result: RecordsAnalysis,
    generation: int,
    owner: str,
    prices: list[Price],
) -> bool:
    """Replace the session's stored results with ``result``, read at ``generation``, and record the
    job's end in the same transaction; False, writing nothing, when a run that read a newer
    generation has stored its results already.

    A run overtaken by a newer ingest still stores what it read: under a steady stream of small
    batches a long session would otherwise never show any result. The newer run overwrites it.
    """
    by_key = {row.key: row for row in rows}
    with transaction.atomic():
        # Lock the session row: two analyses of one session write one after the other.
        Session.objects.select_for_update(no_key=True).filter(pk=session.pk).first()
        # One UPDATE where no newer reading was stored; the job row is looked for only when it misses.
        job = SessionAnalysis.objects.filter(session=session)
        if (
            not job.exclude(stored_generation__gt=generation).update(stored_generation=generation)
            and job.exists()
        ):
            return False
        RequestAnalysis.objects.filter(session=session).delete()
        # The chains first: the re-processed tokens of each request are counted along its lineage.
        _store_chains(by_key, result)
        figures = request_figures(calls=figure_inputs(rows), prices=prices)
        analyses = []
        for r in result.results:
            row = by_key.get(r.key)
            if row is None:
                continue
            figure = figures[row.pk]
            analyses.append(
                RequestAnalysis(
                    request=row,
                    session=session,
                    label=r.label[:120],
                    cause=_first_change_cause(r.data),
                    material=r.material,
                    predicted_read=r.predicted_read,
                    predicted_write=r.predicted_write,
                    wire_allows=r.wire_allows,
                    credited=r.credited,
                    rewritten_tokens=figure.rewritten_tokens,
                    wasted_tokens=figure.reprocessed_tokens,
                    cost=figure.cost,
                    miss_cost=figure.miss_cost,
                    data=r.data,
                )
            )
        insert_rows(RequestAnalysis, analyses, batch_size=WRITE_BATCH)
        if warnings_store(session=session, result=result, requests=by_key, prices=prices):
            sessions_refresh_warning_count(session_ids=[session.pk])
        host_notes_store(session=session, notes=result.host_notes, requests=by_key)
        finished = timezone.now()
        _done(session, rows, result, owner, finished)
        # Keyed by the session as read before its rows: should an ingest have added rows since,
        # pages read a newer key and make the ledger again rather than trust this one.
        ledgers_store(
            {
                session.pk: (
                    session_key(session, analysis_stamp(generation, finished)),
                    cost_ledger(stored_calls(rows)),
                )
            },
            prices=prices,
        )
    return True


def _first_change_cause(data: Mapping[str, object]) -> str:
    """The cause of the first change the analysis found, as the list filters on it; "" for none."""
    change = data.get("first_change")
    cause = change.get("cause") if isinstance(change, dict) else None
    return cause[:40] if isinstance(cause, str) else ""


def _store_chains(rows: Mapping[str, Request], result: RecordsAnalysis) -> None:
    """Keep on each request the lineage the analysis gave it, which every page, chart and cost reads
    (:attr:`Request.current_lineage`); only the rows whose lineage changed are written."""
    changed: dict[str, list[int]] = {}
    for r in result.results:
        row = rows.get(r.key)
        lineage = r.data.get("lineage")
        if row is None or not isinstance(lineage, str):
            continue
        chain = lineage[:CHAIN_MAX_LENGTH]
        # A chain the row already reads as (the importer's lineage, while ``chain`` is empty) is not
        # written: on PostgreSQL each UPDATE rewrites the whole row, its bodies included.
        if row.current_lineage != chain:
            row.chain = chain
            changed.setdefault(chain, []).append(row.pk)
    # One UPDATE per lineage (a session has a few) rather than a CASE over every changed row, which
    # cost more to build and run than the analysis itself.
    for chain, ids in changed.items():
        for start in range(0, len(ids), WRITE_BATCH):
            Request.objects.filter(pk__in=ids[start : start + WRITE_BATCH]).update(chain=chain)
