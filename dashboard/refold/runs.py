"""Re-fold runs: every selected session's stored log folded under two state versions of one key, compared
event by event (DESIGN §5.2).

For each session the run folds the log under both versions, compares the two views after every
event, and then — in one transaction with the session's result row — writes the new version's row
and only after it removes the old version's row of that key. A session with a result row is never
folded into the run again, so a run is resumable after a worker dies (call :func:`refold_run` again,
or enqueue the run with ``resume``) and two workers on the same sessions cannot count one twice.

Chunking: the run task claims the run and enqueues one chunk task per :data:`REFOLD_CHUNK` pending
sessions, so N workers share a run; each chunk re-checks every session under the session's lock.

The new rows are live rows when ``to_version`` is the live version of the key. Otherwise they are
written all the same (ready for when that version goes live), but the incremental fold treats any
row of a non-live version as stale: the session's next fold discards them and folds the live version
from the start. Removing the old version's rows is always safe, for rows are shortcuts: when
``from_version`` is the live one, the next fold of each session rebuilds its row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from dashboard.analysis.session_warnings import session_refresh_warning_count, session_warn
from dashboard.jobs.leases import lease_seconds
from dashboard.models import FoldRun, FoldRunResult, ProjectionRow, Session, Warning
from dashboard.refold.folds import fold_error_message, fold_error_place, row_write, session_records
from dashboard.refold.lockstep import Track, fold_tracks
from projections.folds.registry import UnknownProjection, get_projection

REFOLD_CHUNK = 25
"""Sessions per chunk task: small enough that a dead worker loses little, large enough to batch."""

ProgressCallback = Callable[[FoldRun], None]


class RefoldError(ValueError):
    """A re-fold that cannot be started: an unknown key or version, or unknown sessions."""


class RefoldUnderway(RefoldError):
    """The same comparison over every session is already queued, running or waiting: ``run``."""

    def __init__(self, run: FoldRun) -> None:
        comparison = f"{run.key} v{run.from_version}→v{run.to_version}"
        super().__init__(
            f"re-fold #{run.pk} of {comparison} is {run.get_status_display().lower()}: "
            f"follow it, or carry it on with --resume {run.pk}"
        )
        self.run = run


def fold_run_create(
    *,
    key: str,
    from_version: int,
    to_version: int,
    session_ids: Iterable[int] | None = None,
    created_by: Any = None,
) -> FoldRun:
    """A queued run over ``session_ids`` (every session stored now when ``None``).

    Raises :class:`RefoldUnderway` when the same comparison over every session is unfinished.
    """
    for version in (from_version, to_version):
        try:
            get_projection(key, version)
        except UnknownProjection as error:
            raise RefoldError(str(error)) from None
    if from_version == to_version:
        raise RefoldError(f"--from and --to are both {from_version}: a re-fold compares two versions")
    selected = None if session_ids is None else sorted(set(session_ids))
    if selected is not None:
        known = set(Session.objects.filter(pk__in=selected).values_list("pk", flat=True))
        missing = [pk for pk in selected if pk not in known]
        if missing:
            raise RefoldError(f"no session with id {', '.join(map(str, missing))}")
        total, last = len(selected), None
    else:
        total = Session.objects.count()
        last = Session.objects.aggregate(last=Max("pk"))["last"] or 0
    try:
        with transaction.atomic():
            return FoldRun.objects.create(
                key=key,
                from_version=from_version,
                to_version=to_version,
                session_ids=selected,
                last_session_id=last,
                sessions_total=total,
                created_by=created_by,
            )
    except IntegrityError:
        # The constraint, not a look first: two clicks a few milliseconds apart both look and find none.
        underway = FoldRun.objects.filter(
            key=key, from_version=from_version, to_version=to_version, session_ids__isnull=True
        ).filter(status__in=FoldRun.UNFINISHED)
        run = underway.order_by("pk").first()
        if run is None:
            raise
        raise RefoldUnderway(run) from None


def fold_run_claim(*, run_id: int, owner: str, resume: bool = False) -> bool:
    """Lease a run to ``owner`` with one conditional UPDATE: a queued run, or a running one whose
    lease ran out (its worker died). A live lease is never taken, even by the same task delivered
    again; ``resume`` (an operator's or the sweep's) takes any running run.
    """
    now = timezone.now()
    lapsed = Q(status=FoldRun.Status.RUNNING) & (Q(lease_until__lt=now) | Q(lease_until__isnull=True))
    claimable = Q(status=FoldRun.Status.QUEUED) | lapsed
    if resume:
        claimable |= Q(status=FoldRun.Status.RUNNING)
    claimed = FoldRun.objects.filter(claimable, pk=run_id).update(
        status=FoldRun.Status.RUNNING,
        claimed_by=owner[:200],
        started_at=Coalesce(F("started_at"), now),
        heartbeat_at=now,
        lease_until=_lease_end(),
    )
    return bool(claimed)


def fold_run_renew(*, run_id: int, owner: str) -> bool:
    """Extend ``owner``'s lease on a running run; ``False`` once another has taken the run over."""
    held = FoldRun.objects.filter(pk=run_id, status=FoldRun.Status.RUNNING, claimed_by=owner[:200])
    return bool(held.update(lease_until=_lease_end()))


def _lease_end() -> Any:
    return timezone.now() + timedelta(seconds=lease_seconds())


def fold_run_not_queued(*, run_id: int, reason: str) -> None:
    """Mark a run whose task the broker refused: it waits for an operator to resume it."""
    FoldRun.objects.filter(pk=run_id, status__in=(FoldRun.Status.QUEUED, FoldRun.Status.RUNNING)).update(
        status=FoldRun.Status.NOT_QUEUED,
        message=f"Not queued: the task broker did not answer ({reason[:500]}). Resume once it is back.",
    )


def fold_runs_release_lapsed() -> list[int]:
    """Runs whose lease ran out (no session finished within a lease), each leased afresh for the
    caller to enqueue with ``resume``; a conditional UPDATE keeps two sweeps from both taking one."""
    now = timezone.now()
    released = []
    lapsed = FoldRun.objects.filter(status=FoldRun.Status.RUNNING, lease_until__lt=now)
    for run_id in lapsed.values_list("pk", flat=True):
        again = FoldRun.objects.filter(pk=run_id, status=FoldRun.Status.RUNNING, lease_until__lt=now)
        if again.update(lease_until=_lease_end()):
            released.append(run_id)
    return released


def fold_run_resume(*, run_id: int) -> FoldRun:
    """Set a queued, running or failed run running again, for a worker to take over with ``resume``.

    The one guard of every way to resume (the run page, ``manage.py refold --resume``): the run must
    exist and not be done. The status changes with one conditional UPDATE, so a run that finishes
    meanwhile is not reopened. Raises :class:`RefoldError` saying why a run cannot be resumed.
    """
    reopened = (
        FoldRun.objects.filter(pk=run_id)
        .resumable()
        .update(status=FoldRun.Status.RUNNING, message="", finished_at=None)
    )
    if not reopened:
        if not FoldRun.objects.filter(pk=run_id).exists():
            raise RefoldError(f"no re-fold run #{run_id}")
        raise RefoldError(f"re-fold #{run_id} is already done")
    return FoldRun.objects.get(pk=run_id)


def fold_run_selection(run: FoldRun) -> Q:
    """The sessions a run covers, as a filter on sessions."""
    if run.session_ids is not None:
        return Q(pk__in=run.session_ids)
    return Q(pk__lte=run.last_session_id or 0)


def fold_run_pending(*, run: FoldRun, among: Iterable[int] | None = None) -> list[int]:
    """Ids of the run's sessions that have no result yet, in id order; only those of ``among`` when
    given, so a chunk looks up its own few sessions rather than the whole run's."""
    pending = Session.objects.filter(fold_run_selection(run))
    done = FoldRunResult.objects.filter(run=run).values("session_id")
    if among is not None:
        wanted = list(among)
        pending, done = pending.filter(pk__in=wanted), done.filter(session_id__in=wanted)
    return list(pending.exclude(pk__in=done).order_by("pk").values_list("pk", flat=True))


def fold_run_chunks(*, run_id: int, size: int = REFOLD_CHUNK) -> list[list[int]]:
    """The run's pending sessions split into chunks for the chunk tasks."""
    pending = fold_run_pending(run=FoldRun.objects.get(pk=run_id))
    return [pending[start : start + size] for start in range(0, len(pending), size)]


def refold_run(
    *, run_id: int, session_ids: Iterable[int] | None = None, on_progress: ProgressCallback | None = None
) -> FoldRun:
    """Re-fold the run's pending sessions (only those of ``session_ids`` when given); finish the run
    when none is left. Sessions that already have a result are skipped, so this may be called again
    after an interruption, or by several workers at once."""
    run = FoldRun.objects.get(pk=run_id)
    if run.is_finished:
        return run
    FoldRun.objects.filter(pk=run_id, status=FoldRun.Status.QUEUED).update(
        status=FoldRun.Status.RUNNING, started_at=Coalesce(F("started_at"), timezone.now())
    )
    pending = fold_run_pending(run=run, among=session_ids)
    for session_id in pending:
        refold_session(run=run, session_id=session_id)
        if on_progress is not None:
            on_progress(FoldRun.objects.get(pk=run_id))
    fold_run_finish_if_complete(run_id=run_id)
    return FoldRun.objects.get(pk=run_id)


def fold_run_finish_if_complete(*, run_id: int) -> bool:
    """Mark the run done once every selected session has a result (with one conditional UPDATE)."""
    run = FoldRun.objects.get(pk=run_id)
    if run.is_finished:
        return False
    # Whether any is pending, not which: every chunk asks, and a fleet-sized run has many chunks.
    done_ids = FoldRunResult.objects.filter(run=run).values("session_id")
    if Session.objects.filter(fold_run_selection(run)).exclude(pk__in=done_ids).exists():
        return False
    done = FoldRunResult.objects.filter(run=run).count()
    finished = FoldRun.objects.filter(
        pk=run_id, status__in=(FoldRun.Status.QUEUED, FoldRun.Status.RUNNING)
    ).update(status=FoldRun.Status.DONE, finished_at=timezone.now(), sessions_total=done)
    return bool(finished)


def fold_run_fail(*, run_id: int, message: str) -> None:
    """Stop a run on an unexpected error; its results so far stay, and it can be resumed."""
    FoldRun.objects.filter(pk=run_id).exclude(status=FoldRun.Status.DONE).update(
        status=FoldRun.Status.FAILED, finished_at=timezone.now(), message=message[:2000]
    )


@dataclass
class _Comparison:
    events: int = 0
    divergent_seq: int | None = None
    divergent_type: str = ""
    from_view: Any = None
    to_view: Any = None


def refold_session(*, run: FoldRun, session_id: int) -> FoldRunResult | None:
    """Fold one session under both versions and record it; ``None`` when it already has a result."""
    if FoldRunResult.objects.filter(run=run, session_id=session_id).exists():
        return None
    session = Session.objects.filter(pk=session_id).only("id", "external_id", "unfoldable").first()
    if session is None:
        return None
    old = Track.start(get_projection(run.key, run.from_version))
    new = Track.start(get_projection(run.key, run.to_version))
    started = time.perf_counter()
    comparison = _Comparison()
    if not session.unfoldable:
        comparison = _compare(old, new, session_id)
    seconds = time.perf_counter() - started

    errors = [
        (track, fold_error_message(track.error, key=track.key, ver=track.ver, session=session.external_id))
        for track in (old, new)
        if track.error is not None
    ]
    error_text = "; ".join(message for _, message in errors)
    if session.unfoldable:
        error_text = f"the log cannot be folded: {session.unfoldable}"
    if error_text:
        status = FoldRunResult.Status.ERROR
    elif comparison.divergent_seq is not None:
        status = FoldRunResult.Status.DIVERGED
    else:
        status = FoldRunResult.Status.IDENTICAL
    from_bytes = old.state_bytes() if old.seq is not None else 0
    to_bytes = new.state_bytes() if new.seq is not None else 0

    with transaction.atomic():
        Session.objects.select_for_update(no_key=True).filter(pk=session_id).exists()
        if FoldRunResult.objects.filter(run=run, session_id=session_id).exists():
            return None  # another worker recorded it while this one folded
        if not session.unfoldable:
            new_error = next((message for track, message in errors if track is new), "")
            if new.seq is not None or new_error:
                row_write(session_id=session_id, track=new, error=new_error)
            ProjectionRow.objects.filter(session_id=session_id, key=run.key, ver=run.from_version).delete()
        result = FoldRunResult.objects.create(
            run=run,
            session_id=session_id,
            status=status,
            events=comparison.events,
            divergent_seq=comparison.divergent_seq,
            divergent_type=comparison.divergent_type,
            from_view=comparison.from_view,
            to_view=comparison.to_view,
            error=error_text,
            from_state_bytes=from_bytes,
            to_state_bytes=to_bytes,
            seconds=seconds,
        )
        counter = {
            FoldRunResult.Status.IDENTICAL: "identical",
            FoldRunResult.Status.DIVERGED: "diverged",
            FoldRunResult.Status.ERROR: "errored",
        }[status]
        FoldRun.objects.filter(pk=run.pk).update(
            sessions_done=F("sessions_done") + 1,
            events=F("events") + comparison.events,
            from_state_bytes=F("from_state_bytes") + from_bytes,
            to_state_bytes=F("to_state_bytes") + to_bytes,
            fold_seconds=F("fold_seconds") + seconds,
            heartbeat_at=timezone.now(),
            lease_until=_lease_end(),
            **{counter: F(counter) + 1},
        )
        _warn(run, session_id, comparison, errors)
    return result


def _compare(old: Track, new: Track, session_id: int) -> _Comparison:
    comparison = _Comparison()
    for event, (old_step, new_step) in fold_tracks([old, new], session_records(session_id=session_id)):
        if comparison.divergent_seq is not None or old_step is None or new_step is None:
            continue
        if old_step.view != new_step.view:
            comparison.divergent_seq = event.seq
            comparison.divergent_type = event.type
            comparison.from_view = old.projection.view_json(old_step.view)
            comparison.to_view = new.projection.view_json(new_step.view)
    # Events folded: under either version, up to where it stopped.
    comparison.events = max(old.folded, new.folded)
    return comparison


def _warn(run: FoldRun, session_id: int, comparison: _Comparison, errors: list[tuple[Track, str]]) -> None:
    if comparison.divergent_seq is not None:
        session_warn(
            session_id=session_id,
            kind=Warning.Kind.FOLD_DIVERGENCE,
            place=f"{run.key} v{run.from_version}→v{run.to_version} seq {comparison.divergent_seq}",
            message=(
                f"{run.key} state versions {run.from_version} and {run.to_version} disagree from seq "
                f"{comparison.divergent_seq} ({comparison.divergent_type}): "
                f"v{run.from_version} {comparison.from_view} vs v{run.to_version} {comparison.to_view}"
            ),
            seq=comparison.divergent_seq,
        )
    for track, message in errors:
        assert track.error is not None
        session_warn(
            session_id=session_id,
            kind=Warning.Kind.FOLD_ERROR,
            place=fold_error_place(track.key, track.ver, track.error.seq),
            message=message,
            seq=track.error.seq,
        )
    if comparison.divergent_seq is not None or errors:
        session_refresh_warning_count(session_id=session_id)
