"""Fold tasks: the incremental fold after each ingest, and re-fold runs split into chunk tasks.

Every task here is idempotent (a session folded twice ends with the same rows; a re-folded session
with a result row is skipped), so they acknowledge late: a message whose worker died is delivered
again. A run whose chunk was lost with its worker is picked up again by enqueueing the run with
``resume=True`` (``manage.py refold --resume RUN``, the run page, or the sweep that takes over a
run whose lease ran out). A resumed run's task and chunks go to :data:`RESUME_QUEUE`, not to the
refold queue: there they would wait behind every chunk of the runs started since.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.db import OperationalError

from dashboard.ingest.followups import register_followup
from dashboard.jobs.leases import lease_owner
from dashboard.jobs.options import IDEMPOTENT
from dashboard.models import FoldRun
from dashboard.refold.folds import fold_session, fold_sessions
from dashboard.refold.runs import (
    fold_run_chunks,
    fold_run_claim,
    fold_run_fail,
    fold_run_finish_if_complete,
    refold_run,
)

RESUME_QUEUE = "default"
"""Where a resumed run's task and chunks are sent: a queue every worker serves (the README's
``-Q ingest,fold,refold,default``) that no re-fold fills, so a run taken over from a dead worker
goes on at once rather than after the later runs queued behind it on ``refold``."""


@shared_task(
    name="dashboard.tasks.fold_session",
    **IDEMPOTENT,
)
def fold_session_task(session_id: int) -> None:
    """Bring the live projection rows of one session up to its last stored event."""
    fold_session(session_id=session_id)


@shared_task(
    name="dashboard.tasks.fold_sessions",
    **IDEMPOTENT,
)
def fold_sessions_task(session_ids: list[int]) -> None:
    """Bring the live projection rows of several sessions up to their last stored events."""
    fold_sessions(session_ids=session_ids)


@register_followup
def enqueue_session_folds(session_ids: list[int]) -> None:
    """Fold sessions once their ingest has committed (the follow-ups run on commit)."""
    fold_sessions_task.delay(session_ids)


@shared_task(
    name="dashboard.tasks.refold_run",
    bind=True,
    **IDEMPOTENT,
)
def refold_run_task(self: Task[Any, Any], run_id: int, resume: bool = False) -> None:
    """Claim run ``run_id`` and enqueue one chunk task per chunk of its pending sessions.

    A second delivery of the same run finds it claimed by another task and does nothing; ``resume``
    takes a running run over and enqueues whatever has no result yet.
    """
    owner = lease_owner(self.request.id)
    if not fold_run_claim(run_id=run_id, owner=owner, resume=resume):
        return
    for chunk in fold_run_chunks(run_id=run_id):
        if resume:
            refold_chunk_task.apply_async((run_id, chunk), queue=RESUME_QUEUE)
        else:
            refold_chunk_task.delay(run_id, chunk)
    fold_run_finish_if_complete(run_id=run_id)


@shared_task(
    name="dashboard.tasks.refold_chunk",
    **IDEMPOTENT,
)
def refold_chunk_task(run_id: int, session_ids: list[int]) -> None:
    """Re-fold the sessions of one chunk that have no result yet; the last chunk finishes the run."""
    if not FoldRun.objects.filter(pk=run_id, status=FoldRun.Status.RUNNING).exists():
        return  # finished, failed or gone
    try:
        refold_run(run_id=run_id, session_ids=session_ids)
    except OperationalError:
        raise  # transient: the retry skips the sessions already recorded
    except Exception as error:
        fold_run_fail(run_id=run_id, message=f"{type(error).__name__}: {error}")
        raise
