"""Each session's what-if figures, made again after its analysis (see :mod:`dashboard.savings`)."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.jobs.options import IDEMPOTENT
from dashboard.savings.refresh import sessions_savings_refresh


@shared_task(name="dashboard.tasks.refresh_savings", bind=True, **IDEMPOTENT)
def savings_refresh_task(self: Task[[list[int]], None], session_ids: list[int]) -> None:
    """Replay ``session_ids`` under the what-if scenarios and store their figures; a session whose
    figures are current is left alone, so running it twice costs a few queries."""
    sessions_savings_refresh(session_ids=session_ids)
