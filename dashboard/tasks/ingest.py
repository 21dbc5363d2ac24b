"""The ingest job task: ids in, claim the job, call the service (which records progress and the end)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.db import OperationalError

from dashboard.models import IngestJob
from dashboard.services.ingest_jobs import ingest_job_run


@shared_task(
    name="dashboard.tasks.ingest_job",
    bind=True,
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def ingest_job_task(self: Task[Any, Any], job_id: int) -> None:
    """Ingest the files of job ``job_id``.

    Ingest is idempotent, so a delivery of the same task after a worker died simply runs it again;
    a job that another task owns, or that has finished, is left alone.
    """
    owner = self.request.id or "in-process"
    if not IngestJob.objects.claim(job_id=job_id, owner=owner):
        return
    ingest_job_run(job_id=job_id)
