"""Job leases against real Celery workers: a killed worker's job is taken over within a minute and
stored once; a job whose task the broker hands out again while it runs is run by one worker only."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from dashboard.models import IngestJob, Session
from tests.dashboard.test_faults import _expected_rows, _fleet, _job, _stored_rows
from tests.dashboard.workers import broker_or_skip, send_task, wait_for, worker_process

LEASE_SECONDS = 2
"""The workers' lease in these tests: a dead worker's job is free this long after its last renewal."""
TAKEOVER_LIMIT = 60
"""Seconds within which another worker must have finished a dead worker's job."""
FINISH_LIMIT = 300
"""Seconds within which the worker that took the job over must have finished it."""
SESSIONS, TURNS = 60, 300


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_job_is_taken_over_within_a_minute_and_stored_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = broker_or_skip()
    monkeypatch.setenv("CACHESCOPE_JOB_LEASE_SECONDS", str(LEASE_SECONDS))
    # An hour, as deployed: the broker will not hand the task out again within this test, so only
    # the lease can bring the job back.
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", "3600")
    folder = _fleet(tmp_path / "fleet", sessions=SESSIONS, turns=TURNS)
    job = _job(folder)

    with worker_process(tmp_path / "worker-1.log", broker=broker) as worker:
        send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest")
        wait_for(lambda: Session.objects.count() >= 5, timeout=30)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    killed = IngestJob.objects.get(pk=job.pk)
    assert killed.status == IngestJob.Status.RUNNING
    assert Session.objects.count() < SESSIONS, "the ingest finished before the worker was killed"

    started = time.monotonic()
    with worker_process(tmp_path / "worker-2.log", broker=broker):
        # The takeover is the claim by another worker; finishing the rest of the fleet is ordinary
        # ingest work, whose speed depends on the database and the machine's load, not on leases.
        wait_for(lambda: _claimed_by_another(job.pk, killed.claimed_by), timeout=TAKEOVER_LIMIT)
        took = time.monotonic() - started
        wait_for(lambda: IngestJob.objects.get(pk=job.pk).is_finished, timeout=FINISH_LIMIT)
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert took < TAKEOVER_LIMIT
    assert job.claimed_by != killed.claimed_by
    assert job.bytes_done == job.bytes_total
    assert _stored_rows() == _expected_rows(folder, sessions=SESSIONS, turns=TURNS)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_task_delivered_again_while_its_job_runs_does_not_run_it_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if connection.vendor != "postgresql":
        # Several workers are the scale-out mode, on PostgreSQL; on one SQLite file two busy workers
        # take turns at its write lock, and the job outlasts any fair time limit.
        pytest.skip("several workers at once need PostgreSQL")
    broker = broker_or_skip()
    monkeypatch.setenv("CACHESCOPE_JOB_LEASE_SECONDS", str(LEASE_SECONDS))
    folder = _fleet(tmp_path / "fleet", sessions=SESSIONS, turns=TURNS)
    job = _job(folder)
    task_id = str(uuid.uuid4())
    owners: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        try:
            while not done.is_set():
                owner = IngestJob.objects.filter(pk=job.pk).values_list("claimed_by", flat=True).first()
                if owner:
                    owners.add(owner)
                time.sleep(0.1)
        finally:
            connection.close()  # this thread's own connection

    with (
        worker_process(tmp_path / "worker-1.log", broker=broker),
        worker_process(tmp_path / "worker-2.log", broker=broker),
    ):
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest", task_id=task_id)
            wait_for(lambda: Session.objects.count() >= 3, timeout=30)
            # The same message again, as a broker redelivers it; the busy first worker leaves it
            # to the second, which must find the job's lease live, whatever the task id.
            send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest", task_id=task_id)
            wait_for(lambda: IngestJob.objects.get(pk=job.pk).is_finished, timeout=FINISH_LIMIT)
        finally:
            done.set()
            watcher.join()
    logs = [(tmp_path / f"worker-{n}.log").read_text() for n in (1, 2)]
    assert all(f"ingest_job[{task_id}] received" in log for log in logs), "each worker got one delivery"
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert len(owners) == 1, f"the job changed hands while it ran: {owners}"
    assert job.duplicates == 0, "a second run would have found lines already stored"
    assert _stored_rows() == _expected_rows(folder, sessions=SESSIONS, turns=TURNS)


def _claimed_by_another(job_id: int, dead_owner: str) -> bool:
    job = IngestJob.objects.get(pk=job_id)
    return job.claimed_by not in ("", dead_owner) or job.is_finished
