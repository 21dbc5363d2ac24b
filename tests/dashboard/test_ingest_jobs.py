"""An ingest job's claim (on its queryset) and its run (in the service), as every entry point uses them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings

from dashboard.models import IngestJob, Session
from dashboard.services.ingest_jobs import ingest_job_run


def queued_job(log: Path) -> IngestJob:
    folder = Path(settings.DATA_DIR) / "uploads-test" / log.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(log, folder / "session.jsonl")
    return IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(folder)])


@pytest.mark.django_db
def test_claiming_a_queued_job_sets_it_running_for_its_owner(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    job.refresh_from_db()
    assert (job.status, job.claimed_by) == ("running", "task-a")
    assert job.started_at is not None


@pytest.mark.django_db
def test_a_job_held_by_another_owner_cannot_be_claimed(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    assert not IngestJob.objects.claim(job_id=job.pk, owner="task-b")
    assert IngestJob.objects.get(pk=job.pk).claimed_by == "task-a"


@pytest.mark.django_db
def test_the_same_owner_claims_its_job_again_and_its_progress_restarts(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    IngestJob.objects.filter(pk=job.pk).update(bytes_done=123)
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    assert IngestJob.objects.get(pk=job.pk).bytes_done == 0


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["done", "failed"])
def test_a_finished_job_cannot_be_claimed(dsh_log: Path, status: str) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.filter(pk=job.pk).update(status=status)
    assert not IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    assert IngestJob.objects.get(pk=job.pk).status == status


@pytest.mark.django_db
def test_a_run_records_its_progress_file_by_file_and_its_counts(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    seen: list[tuple[int, int]] = []

    def record(current: IngestJob) -> None:
        seen.append((current.bytes_done, current.bytes_total))

    ingest_job_run(job_id=job.pk, on_progress=record)
    job.refresh_from_db()
    assert (job.status, job.sessions_added, job.events_added) == ("done", 1, 5)
    assert job.bytes_done == job.bytes_total == dsh_log.stat().st_size
    assert seen == [(job.bytes_total, job.bytes_total)]


@pytest.mark.django_db
def test_a_run_that_breaks_records_the_failure_on_the_job_and_raises_it(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.filter(pk=job.pk).update(paths=[42])  # a row no upload could have written
    IngestJob.objects.claim(job_id=job.pk, owner="task-a")
    with pytest.raises(TypeError):
        ingest_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.message.startswith("TypeError: ")
    assert job.finished_at is not None
    assert not Session.objects.exists()
