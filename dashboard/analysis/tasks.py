"""The cache analysis of a session, after each ingest and on demand; its what-if figures after it."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.analysis.stored_sessions import (
    analyses_claim,
    analyses_renew,
    analyses_request,
    analysis_claim,
    analysis_renew,
    session_analyse,
    sessions_analyse,
)
from dashboard.ingest.followups import register_followup
from dashboard.jobs.leases import Heartbeat, lease_owner, lease_seconds
from dashboard.jobs.options import IDEMPOTENT
from dashboard.savings.tasks import savings_refresh_task


@shared_task(
    name="dashboard.tasks.analyse_session",
    bind=True,
    **IDEMPOTENT,
)
def analyse_session_task(self: Task[[int], None], session_id: int) -> None:
    """Analyse session ``session_id`` if its analysis is queued; re-running it only rewrites the same rows."""
    owner = lease_owner(self.request.id)
    if not analysis_claim(session_id=session_id, owner=owner):
        return  # another task holds a live lease on it, or nothing new was asked for

    def renew() -> bool:
        return analysis_renew(session_id=session_id, owner=owner)

    with Heartbeat(renew, seconds=lease_seconds()):
        session_analyse(session_id=session_id, owner=owner)
    # The what-if reads the lineages the analysis decided: queued once they are stored.
    savings_refresh_task.delay([session_id])


@shared_task(
    name="dashboard.tasks.analyse_sessions",
    bind=True,
    **IDEMPOTENT,
)
def analyse_sessions_task(self: Task[[list[int]], None], session_ids: list[int]) -> None:
    """Analyse those of ``session_ids`` whose analysis is queued, one after the other, under one lease."""
    owner = lease_owner(self.request.id)
    claimed = analyses_claim(session_ids=session_ids, owner=owner)
    if not claimed:
        return

    def renew() -> bool:
        return analyses_renew(session_ids=claimed, owner=owner)

    with Heartbeat(renew, seconds=lease_seconds()):
        sessions_analyse(session_ids=claimed, owner=owner)
    savings_refresh_task.delay(claimed)


@register_followup
def enqueue_session_analyses(session_ids: list[int]) -> None:
    """Queue the analyses of sessions whose ingest has just committed."""
    wanted = analyses_request(session_ids=session_ids)
    if wanted:
        analyse_sessions_task.delay(wanted)
