"""An ingest job run to its end, with its progress and its outcome recorded on the job row.

The job's task (or the ``ingest`` command) claims the job first; this records, on the row, the bytes
to read, the bytes read so far as each file finishes, and the end: done with its counts (written by
:func:`~dashboard.services.ingest.ingest_paths`), or failed with the error that stopped it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.db import OperationalError
from django.utils import timezone

from dashboard.models import IngestJob
from dashboard.services.ingest import IngestSummary, ingest_paths, input_size
from dashboard.services.uploads import upload_remove_files

DEFAULT_SOURCE = "uploads"
"""The source of a job that names none (an upload whose form left it empty)."""

JobProgressCallback = Callable[[IngestJob], None]


def ingest_job_run(*, job_id: int, on_progress: JobProgressCallback | None = None) -> IngestSummary:
    """Ingest the files of claimed job ``job_id``; ``on_progress`` is given the job as each file ends.

    An unexpected error marks the job failed with the error's type and text, and is raised again. A
    database :class:`~django.db.OperationalError` is not recorded: it is transient, and the task
    retries the whole job (ingest is idempotent).
    """
    job = IngestJob.objects.get(pk=job_id)

    def advance(amount: int) -> None:
        job.bytes_done += amount
        IngestJob.objects.filter(pk=job_id).update(bytes_done=job.bytes_done)
        if on_progress is not None:
            on_progress(job)

    try:
        paths = [Path(p) for p in job.paths]
        job.bytes_total = input_size(paths)
        job.save(update_fields=["bytes_total"])
        summary = ingest_paths(
            paths=paths,
            source_name=job.source_name or DEFAULT_SOURCE,
            format=job.format or None,
            job=job,
            on_progress=advance,
        )
    except OperationalError:
        raise
    except Exception as error:
        ingest_job_fail(job_id=job_id, message=f"{type(error).__name__}: {error}")
        raise
    if job.kind == IngestJob.Kind.UPLOAD:
        # Stored now: the uploaded copies would only fill the disk. A failed job keeps them to retry.
        upload_remove_files(job)
    return summary


def ingest_job_fail(*, job_id: int, message: str) -> None:
    """Stop a job on an unexpected error; what it stored before the error stays stored."""
    IngestJob.objects.filter(pk=job_id).exclude(status=IngestJob.Status.DONE).update(
        status=IngestJob.Status.FAILED, finished_at=timezone.now(), message=message[:2000]
    )
