"""Background API batches: a body saved under the data folder as a queued ingest job of kind API.

The ingest task runs such a job as it runs an upload (lease, progress, failure on the job row), and
stores its body with :func:`~dashboard.ingest.api.lines.api_ingest`, the synchronous endpoint's
own function, so a batch stores the same rows and reports the same line errors either way. The
caller enqueues the job's task: services sit below the tasks that call them.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from dashboard.ingest.api.body import BodyRejected, Readable, body_read
from dashboard.ingest.api.lines import MAX_REPORTED_ERRORS, BatchLimits, StepCallback, api_ingest
from dashboard.ingest.files import IngestSummary, ingest_job_record
from dashboard.ingest.uploads import NO_SPACE, is_disk_full
from dashboard.jobs.tally import job_tally_read
from dashboard.models import IngestJob, Source

BODY_NAME = "body.ndjson"
"""The file, in the job's folder, that holds the decompressed body."""


def api_batch_create(
    *, stream: Readable, content_length: int | None, content_encoding: str, source: Source, label: str
) -> IngestJob:
    """Read a body, within ``CACHESCOPE_API_BATCH_MAX_BYTES``, into a new queued API job for ``source``.

    The body is written under the uploads folder before the job row exists, so no transaction stays
    open while a large body arrives. Raises :class:`BodyRejected` (413, 415, 400, and 507 when the
    data folder is full); a refused body leaves neither a file nor a job behind.
    """
    folder = Path(settings.DATA_DIR) / "uploads" / f"api-{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True)
        with (folder / BODY_NAME).open("wb") as out:
            body_read(
                stream=stream,
                content_length=content_length,
                content_encoding=content_encoding,
                max_bytes=settings.CACHESCOPE_API_BATCH_MAX_BYTES,
                into=out,
            )
        size = (folder / BODY_NAME).stat().st_size
        if not size:
            raise BodyRejected(400, "body is not NDJSON: it is empty")
        # In the try: a database gone before the job row is written leaves no body behind either.
        return IngestJob.objects.create(
            kind=IngestJob.Kind.API,
            label=label[:500],
            source_name=source.name,
            paths=[str(folder)],
            bytes_total=size,
        )
    except OSError as error:
        shutil.rmtree(folder, ignore_errors=True)
        if is_disk_full(error):
            raise BodyRejected(507, f"{NO_SPACE}; nothing was saved: send this batch again later") from None
        raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def api_batch_store(job: IngestJob, *, on_step: StepCallback) -> IngestSummary:
    """Store the body of API job ``job`` and record the outcome on it, as the synchronous API would.

    Raises :class:`BodyRejected` when the batch passes the batch limits or holds no JSON object.
    """
    source, _ = Source.objects.get_or_create(name=job.source_name)
    # What the job's earlier attempts committed (a worker killed mid-batch, a database restart).
    earlier = job_tally_read(job_id=job.pk)
    with (Path(job.paths[0]) / BODY_NAME).open("rb") as body:
        result = api_ingest(
            body=body, source=source, limits=BatchLimits.for_batches(), on_step=on_step, job_id=job.pk
        )
    summary = IngestSummary(
        sessions_added=result.summary.sessions_added,
        sessions_updated=result.summary.sessions_updated,
        sessions_unchanged=result.summary.sessions_unchanged,
        events_added=result.summary.events_added,
        requests_added=result.summary.requests_added,
        duplicate_events=result.summary.duplicate_events,
        duplicate_requests=result.summary.duplicate_requests,
        errors=result.errors,
        notices=result.notices,
        changed_session_ids=result.summary.changed_session_ids,
    )
    summary.include_earlier(earlier)
    ingest_job_record(job, summary)
    return summary


def api_batch_for_source(*, job_id: int, source: Source) -> IngestJob | None:
    """API job ``job_id`` if ``source`` sent it; ``None`` otherwise, so no source sees another's."""
    return IngestJob.objects.filter(pk=job_id, kind=IngestJob.Kind.API, source_name=source.name).first()


def api_batch_status(job: IngestJob) -> dict[str, Any]:
    """The job as the API answers it: status, progress, counts, and per-line errors and notices."""
    errors = list(job.errors.order_by("line", "id")[: MAX_REPORTED_ERRORS + 1])
    notices = list(job.notices.order_by("line", "id")[:MAX_REPORTED_ERRORS])
    answer: dict[str, Any] = {
        "id": job.pk,
        "status": job.status,
        "progress": job.percent,
        "sessions": job.sessions_added + job.sessions_updated,
        "accepted": job.events_added + job.requests_added,
        "duplicates": job.duplicates,
        "duplicate_events": job.duplicate_events,
        "duplicate_requests": job.duplicate_requests,
        "events": job.events_added,
        "requests": job.requests_added,
        "errors": [
            {"line": e.line, "field": e.field, "message": e.reason} for e in errors[:MAX_REPORTED_ERRORS]
        ],
        "notices": [{"line": n.line, "field": n.field, "message": n.reason} for n in notices],
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
    if job.error_count > MAX_REPORTED_ERRORS:
        answer["errors_truncated"] = job.error_count - MAX_REPORTED_ERRORS
    if job.message:
        answer["message"] = job.message
    return answer
