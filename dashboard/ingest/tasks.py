"""The ingest job task: ids in, claim the job, call the service (which records progress and the end)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.db import OperationalError

from dashboard.ingest.jobs import ingest_job_claim, ingest_job_release, ingest_job_run
from dashboard.jobs.leases import LeaseLost, lease_owner
from dashboard.jobs.options import IDEMPOTENT


@shared_task(
    name="dashboard.tasks.ingest_job",
    bind=True,
    **IDEMPOTENT,
)
def ingest_job_task(self: Task[Any, Any], job_id: int) -> None:
    """Ingest the files of job ``job_id`` under a lease (see :mod:`dashboard.jobs.leases`).

    A job whose lease another worker holds, or that has finished, is left alone: a second delivery
    of this task while the first still runs does nothing. A job whose worker died is taken over
    once its lease runs out (ingest is idempotent, so it simply runs again).
    """
    owner = lease_owner(self.request.id)
    if not ingest_job_claim(job_id=job_id, owner=owner):
        return
    try:
        ingest_job_run(job_id=job_id, owner=owner)
    except LeaseLost:
        return  # another worker has the job now; it finishes it
    except OperationalError:
        # The retry runs under a new owner name: left held, the job would wait out a whole lease
        # for the sweep. A database too far gone to release it leaves exactly that wait.
        ingest_job_release(job_id=job_id, owner=owner)
        raise
