"""The alerts check as a Celery task, which beat sends every ``CACHESCOPE_ALERTS_EVERY_SECONDS``
(``CELERY_BEAT_SCHEDULE`` in the settings). Running it twice at once sends nothing twice."""

from __future__ import annotations

from celery import shared_task

from dashboard.alerts.runner import alerts_check
from dashboard.jobs.options import IDEMPOTENT


@shared_task(name="dashboard.tasks.alerts_check", **IDEMPOTENT)
def alerts_check_task() -> None:
    """Evaluate every enabled rule now and send the notifications that are due."""
    alerts_check()
