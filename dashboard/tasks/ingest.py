"""Celery tasks: ids in, claim the job, call the service, record progress on the job row."""

from __future__ import annotations

from pathlib import Path

from celery import Task, shared_task
from django.db import OperationalError
from django.db.models import Q
from django.utils import timezone

from dashboard.models import IngestJob
from dashboard.services.ingest import ingest_paths, input_size


@shared_task(
    name="dashboard.tasks.ingest_job",
    bind=True,
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def ingest_job_task(self: Task, job_id: int) -> None:
    """Ingest the files of job ``job_id``.

    Ingest is idempotent, so a delivery of the same task after a worker died simply runs it again;
    a job that another task owns, or that has finished, is left alone.
    """
    owner = self.request.id or "in-process"
    claimable = Q(status=IngestJob.Status.QUEUED) | Q(status=IngestJob.Status.RUNNING, claimed_by=owner)
    # A redelivery after the worker died starts the job again: progress restarts from zero.
    claimed = IngestJob.objects.filter(claimable, pk=job_id).update(
        status=IngestJob.Status.RUNNING, started_at=timezone.now(), claimed_by=owner, bytes_done=0
    )
    if not claimed:
        return
    job = IngestJob.objects.get(pk=job_id)
    paths = [Path(p) for p in job.paths]
    job.bytes_total = input_size(paths)
    job.save(update_fields=["bytes_total"])

    def advance(amount: int) -> None:
        job.bytes_done += amount
        IngestJob.objects.filter(pk=job_id).update(bytes_done=job.bytes_done)

    try:
        ingest_paths(
            paths=paths,
            source_name=job.source_name or "uploads",
            format=job.format or None,
            job=job,
            on_progress=advance,
        )
    except OperationalError:
        raise  # transient: the retry re-claims the job under the same task id
    except Exception as error:
        IngestJob.objects.filter(pk=job_id).update(
            status=IngestJob.Status.FAILED,
            finished_at=timezone.now(),
            message=f"{type(error).__name__}: {error}",
        )
        raise
