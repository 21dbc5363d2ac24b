from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings

from dashboard.models import IngestJob, Session
from dashboard.worker.tasks import ingest_job_task
from tests.dashboard.workers import broker_or_skip, send_task, wait_for, worker_process


def _queued_job(log: Path) -> IngestJob:
    folder = Path(settings.DATA_DIR) / "uploads-test" / log.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(log, folder / "session.jsonl")
    return IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(folder)])


@pytest.mark.django_db
def test_ingest_task_claims_the_job_and_records_its_result(dsh_log: Path) -> None:
    job = _queued_job(dsh_log)
    ingest_job_task.delay(job.pk)
    job.refresh_from_db()
    assert (job.status, job.sessions_added, job.events_added) == ("done", 1, 5)
    assert job.bytes_done == job.bytes_total > 0


@pytest.mark.django_db
def test_ingest_task_leaves_a_finished_job_alone(dsh_log: Path) -> None:
    job = _queued_job(dsh_log)
    IngestJob.objects.filter(pk=job.pk).update(status=IngestJob.Status.DONE)
    ingest_job_task.delay(job.pk)
    assert not Session.objects.exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_ingests_a_job_sent_through_the_broker(dsh_log: Path, tmp_path: Path) -> None:
    broker = broker_or_skip()
    job = _queued_job(dsh_log)
    with worker_process(tmp_path / "worker.log", broker=broker):
        send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest")
        wait_for(lambda: IngestJob.objects.get(pk=job.pk).is_finished)
    job.refresh_from_db()
    assert (job.status, job.sessions_added, job.events_added) == ("done", 1, 5)
    assert Session.objects.get().external_id == "s1"


def test_every_task_is_acknowledged_late_and_retried_while_the_database_is_away() -> None:
    from django.db import OperationalError

    import dashboard.worker.tasks as tasks

    for name in tasks.__all__:
        task = getattr(tasks, name)
        if not hasattr(task, "delay"):
            continue  # a helper that sends tasks, not a task
        assert task.acks_late, name
        assert task.autoretry_for == (OperationalError,), name
        assert (task.retry_backoff, task.max_retries) == (True, 5), name
