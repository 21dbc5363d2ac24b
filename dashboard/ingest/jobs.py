"""An ingest job run to its end, with its progress and its outcome recorded on the job row.

The job's task (or the ``ingest`` command) claims the job first; this records, on the row, the bytes
to read, the bytes read so far as each file finishes, and the end: done with its counts (written by
:func:`~dashboard.ingest.files.ingest_paths`), or failed with the error that stopped it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import DatabaseError, OperationalError, close_old_connections, connection
from django.utils import timezone

from dashboard.ingest.api.body import BodyRejected
from dashboard.ingest.summary import IngestSummary
from dashboard.ingest.uploads import upload_remove_files
from dashboard.jobs.leases import Heartbeat, LeaseLost, lease_seconds
from dashboard.models import IngestJob
from dashboard.models.ingest import SAVED_FILE_KINDS
from dashboard.storage.db_outage import DatabaseUnavailable
from dashboard.storage.db_retry import retrying

if TYPE_CHECKING:
    from dashboard.ingest.incremental.reading import ChangedFiles

log = logging.getLogger(__name__)

DEFAULT_SOURCE = "uploads"
"""The source of a job that names none (an upload whose form left it empty)."""
PROGRESS_SECONDS = 0.5
"""How often a running job's progress is written for its page, which polls about as often: a
write a file would cost a folder of small files a commit each. The job's end writes the total."""

JobProgressCallback = Callable[[IngestJob], None]


def ingest_job_claim(*, job_id: int, owner: str) -> bool:
    """Lease job ``job_id`` to ``owner``: ``False`` when it is finished or another worker holds it."""
    return IngestJob.objects.claim(job_id=job_id, owner=owner, lease_seconds=lease_seconds())


def ingest_job_release(*, job_id: int, owner: str) -> None:
    """Queue ``owner``'s job again after a transient database error, for its task's retry to claim.

    The database that raised the error may refuse this too; the lease then runs out as it would
    for a dead worker, and the sweep hands the job on.
    """
    try:
        IngestJob.objects.release(job_id=job_id, owner=owner)
    except DatabaseError:
        log.warning("could not release ingest job %s after a database error", job_id, exc_info=True)


def ingest_job_run(
    *, job_id: int, owner: str, on_progress: JobProgressCallback | None = None
) -> IngestSummary:
    """Ingest the files of job ``job_id``, claimed by ``owner``; ``on_progress`` is given the job as
    each file ends.

    A heartbeat renews ``owner``'s lease while the ingest runs; should another worker take the job
    over (this one stalled past its lease), :class:`~dashboard.jobs.leases.LeaseLost` is raised
    at the next file. An unexpected error marks the job failed with the error's type and text, and
    is raised again. A deadlock is retried here, the whole job again; any other database
    :class:`~django.db.OperationalError` is not recorded: it is transient, and the task retries the
    whole job (ingest is idempotent).
    """
    seconds = lease_seconds()
    with Heartbeat(
        lambda: IngestJob.objects.renew(job_id=job_id, owner=owner, lease_seconds=seconds), seconds=seconds
    ) as heartbeat:
        return _run(job_id, heartbeat, on_progress)


def _run(job_id: int, heartbeat: Heartbeat, on_progress: JobProgressCallback | None) -> IngestSummary:
    job = IngestJob.objects.get(pk=job_id)
    written = -PROGRESS_SECONDS

    def advance(amount: int) -> None:
        nonlocal written
        heartbeat.check()
        job.bytes_done += amount
        if time.monotonic() - written >= PROGRESS_SECONDS:
            IngestJob.objects.filter(pk=job_id).update(bytes_done=job.bytes_done)
            written = time.monotonic()
        if on_progress is not None:
            on_progress(job)

    def stored(sessions: int, of: int) -> None:
        # An API batch's progress is the share of its sessions committed so far.
        advance(job.bytes_total * sessions // max(of, 1) - job.bytes_done)

    source_name = job.source_name or DEFAULT_SOURCE
    changed = None
    try:
        paths = [Path(p) for p in job.paths]
        if job.kind == IngestJob.Kind.COMMAND:
            # A command's files are the local ones it is run on again and again: each is read from
            # where the last ingest of it stopped, and one unchanged costs a stat (which the bar's
            # total would cost again). An upload's saved copies are new files every time.
            changed = _changed_files(paths, source_name, job.format or None, advance)
            if not changed.pending and not changed.errors:
                return _nothing_changed(job, changed)
    except (OperationalError, LeaseLost):
        raise
    except Exception as error:
        ingest_job_fail(job_id=job_id, message=f"{type(error).__name__}: {error}")
        raise

    # The readers and the writers load here, on the first job with something to read, rather than
    # with the ingest page, the API and the command's --help, which import this module but may
    # never run a job.
    from dashboard.ingest.files import ingest_paths, input_size, shown_on_job

    def attempt() -> IngestSummary:
        job.bytes_done = 0
        if job.kind == IngestJob.Kind.API:
            from dashboard.ingest.api.batches import api_batch_store

            return api_batch_store(job, on_step=stored)
        if changed is None:
            job.bytes_total = input_size(paths)
            job.save(update_fields=["bytes_total"])
        return ingest_paths(
            paths=paths,
            source_name=source_name,
            format=job.format or None,
            job=job,
            on_progress=advance,
            changed=changed,
        )

    try:
        # A deadlock (two ingests of one folder, a cron job beside a manual run) is run again
        # whole, over the files found changed at the start and from the same points: a folder is
        # read as a stream, so a group cannot be replayed alone, and each commit has counted what
        # it stored on the job, so the next attempt's counts add up.
        summary = retrying(attempt)
    except (OperationalError, LeaseLost):
        raise
    except BodyRejected as rejected:
        # The sender's batch, not the worker, is at fault: recorded on the job, nothing to raise.
        ingest_job_fail(job_id=job_id, message=f"Refused: {rejected.message}")
        return IngestSummary()
    except Exception as error:
        # The job's page shows the message: the server's upload folder is cut out of any path in it.
        ingest_job_fail(job_id=job_id, message=shown_on_job(job, f"{type(error).__name__}: {error}"))
        raise
    if job.kind in SAVED_FILE_KINDS:
        # Stored now: the saved copies would only fill the disk. A failed job keeps them to retry.
        upload_remove_files(job)
    return summary


def _changed_files(
    paths: list[Path], source_name: str, format: str | None, on_progress: Callable[[int], None]
) -> ChangedFiles:
    from dashboard.ingest.incremental.reading import ChangedFiles
    from dashboard.models import Source

    source, _ = Source.objects.get_or_create(name=source_name)
    return ChangedFiles(paths, source=source, format=format, on_progress=on_progress)


def _nothing_changed(job: IngestJob, changed: ChangedFiles) -> IngestSummary:
    """Finish a job whose files are all as its source's last ingest left them, without loading a
    reader or the writer: what a refresh of unchanged logs costs is a stat a file."""
    job.status = IngestJob.Status.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "finished_at"])
    return IngestSummary(files=changed.counts)


def ingest_job_fail(*, job_id: int, message: str) -> None:
    """Stop a job on an unexpected error; what it stored before the error stays stored."""
    IngestJob.objects.filter(pk=job_id).exclude(status=IngestJob.Status.DONE).update(
        status=IngestJob.Status.FAILED, finished_at=timezone.now(), message=message[:2000]
    )


LABEL_TRIES = 15
LABEL_PAUSE_SECONDS = 1.0


def ingest_job_database_unavailable(
    *, job_id: int, owner: str, stopped: DatabaseUnavailable, sleep: Callable[[float], None] = time.sleep
) -> bool:
    """Mark ``owner``'s job failed as "database unavailable", with what it stored; ``False`` when
    the database stayed away.

    The database that stopped the job must answer the write that says so: it is tried again each
    second for a while (a restart is back within seconds); after that the job's lease runs out and
    the sweep marks it failed as any stopped job, its counts as its commits left them.
    """
    message = f"Database unavailable: {stopped.reason}. Stored before it stopped: {stopped.stored}."
    for attempt in range(LABEL_TRIES):
        if attempt:
            sleep(LABEL_PAUSE_SECONDS)
        try:
            close_old_connections()
            IngestJob.objects.filter(pk=job_id, claimed_by=owner[:200]).update(
                status=IngestJob.Status.FAILED,
                finished_at=timezone.now(),
                claimed_by="",
                lease_until=None,
                message=message[:2000],
            )
        except DatabaseError:
            connection.close()
            continue
        return True
    return False


def ingest_job_not_queued(*, job_id: int, reason: str) -> None:
    """Mark a queued job whose task the broker refused: it waits for an operator's retry."""
    IngestJob.objects.filter(pk=job_id, status=IngestJob.Status.QUEUED).update(
        status=IngestJob.Status.NOT_QUEUED,
        message=f"Not queued: the task broker did not answer ({reason[:500]}). Retry once it is back.",
    )


def ingest_job_retryable(job: IngestJob) -> bool:
    """Whether an operator may queue ``job`` again: an upload or API batch that was never queued, or
    that failed, whose files are still there."""
    if job.kind not in SAVED_FILE_KINDS:
        return False
    if job.status not in (IngestJob.Status.NOT_QUEUED, IngestJob.Status.FAILED):
        return False
    return bool(job.paths) and all(Path(p).exists() for p in job.paths)


def ingest_job_requeue(*, job_id: int) -> bool:
    """Set a retryable job queued again with one conditional UPDATE; ``False`` when it is not retryable."""
    job = IngestJob.objects.filter(pk=job_id).first()
    if job is None or not ingest_job_retryable(job):
        return False
    reopened = IngestJob.objects.filter(pk=job_id, status=job.status).update(
        status=IngestJob.Status.QUEUED, message="", finished_at=None, claimed_by="", lease_until=None
    )
    return bool(reopened)


def ingest_jobs_release_lapsed() -> list[int]:
    """Queue again the uploads and API batches whose worker's lease ran out; fail the other lapsed jobs.

    Returns the ids set queued, for the caller to enqueue. Each release is a conditional UPDATE on
    the lapsed lease, so two sweeping workers never both release one job. Only the files the web
    process saved are sure to be where any worker can read them; a command's job ends failed.
    """
    released = []
    now = timezone.now()
    for job_id, kind in IngestJob.objects.lapsed().values_list("pk", "kind"):
        lapsed = IngestJob.objects.filter(pk=job_id, status=IngestJob.Status.RUNNING, lease_until__lt=now)
        if kind in SAVED_FILE_KINDS:
            if lapsed.update(status=IngestJob.Status.QUEUED, claimed_by="", lease_until=None):
                released.append(job_id)
        else:
            lapsed.update(
                status=IngestJob.Status.FAILED,
                finished_at=now,
                claimed_by="",
                lease_until=None,
                message="The process running this ingest stopped before it finished; what it had "
                "stored is counted here and kept. Run it again to store the rest.",
            )
    return released
