"""Faults against the real services: a worker killed mid-ingest, the database restarting, the broker down.

Each test compares what is stored after the fault with what an uninterrupted ingest stores: no row
lost, none doubled. (A worker killed during a re-fold is tested in ``test_refold.py``.)
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse
from kombu import pools as kombu_pools

from dashboard.access.tokens import token_create
from dashboard.models import Event, IngestJob, Request, Session, Source
from tests.dashboard.logs import dsh_lines, write_dsh_log
from tests.dashboard.workers import broker_or_skip, send_task, wait_for, worker_process

VISIBILITY_TIMEOUT = 2
"""Seconds before the broker hands an unacknowledged task to the next worker (the setting's test value)."""


def _fleet(folder: Path, *, sessions: int, turns: int) -> Path:
    for n in range(sessions):
        write_dsh_log(folder / f"s{n:03}" / "session.jsonl", session_id=f"s{n:03}", turns=turns)
    return folder


def _stored_rows() -> dict[str, Any]:
    events = list(
        Event.objects.order_by("session__external_id", "seq").values_list("session__external_id", "seq")
    )
    requests = list(
        Request.objects.order_by("session__external_id", "key").values_list("session__external_id", "key")
    )
    return {
        "sessions": sorted(Session.objects.values_list("external_id", flat=True)),
        "events": events,
        "requests": requests,
    }


def _expected_rows(folder: Path, *, sessions: int, turns: int) -> dict[str, Any]:
    """What an uninterrupted ingest of ``_fleet`` stores, counted from the logs themselves."""
    names = [f"s{n:03}" for n in range(sessions)]
    events = [(name, seq) for name in names for seq in range(1 + 2 * turns)]
    requests = sorted((name, f"seq-{2 * turn}") for name in names for turn in range(1, turns + 1))
    return {"sessions": names, "events": events, "requests": requests}


def _job(folder: Path) -> IngestJob:
    return IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="fleet", paths=[str(folder)])


def _taken_over(job_id: int, dead_owner: str) -> bool:
    """Whether another worker has claimed (or already finished) the job a dead worker held."""
    job = IngestJob.objects.get(pk=job_id)
    return job.claimed_by not in ("", dead_owner) or job.is_finished


# --- a worker killed in the middle of an ingest -------------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_ingest_survives_its_worker_being_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broker = broker_or_skip()
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", str(VISIBILITY_TIMEOUT))
    # The redelivered task may run the job only once the dead worker's lease has run out.
    monkeypatch.setenv("CACHESCOPE_JOB_LEASE_SECONDS", str(VISIBILITY_TIMEOUT))
    sessions, turns = 60, 300
    folder = _fleet(Path(settings.DATA_DIR) / "fault-kill" / tmp_path.name, sessions=sessions, turns=turns)
    job = _job(folder)
    with worker_process(tmp_path / "worker-1.log", broker=broker) as worker:
        send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest")
        wait_for(lambda: Session.objects.count() >= 5, timeout=30)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    killed = IngestJob.objects.get(pk=job.pk)
    assert killed.status == IngestJob.Status.RUNNING
    assert Session.objects.count() < sessions, "the ingest finished before the worker was killed"

    time.sleep(VISIBILITY_TIMEOUT + 1)
    with worker_process(tmp_path / "worker-2.log", broker=broker):
        # No new message: the broker hands the unacknowledged one to the new worker, which claims the
        # job at once; the rest of the fleet then takes what the machine's load allows.
        wait_for(lambda: _taken_over(job.pk, killed.claimed_by), timeout=45)
        wait_for(lambda: IngestJob.objects.get(pk=job.pk).is_finished, timeout=300)
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert job.bytes_done == job.bytes_total
    assert _stored_rows() == _expected_rows(folder, sessions=sessions, turns=turns)


# --- the database restarting in the middle of an ingest -----------------------------------------------


def _cluster_command() -> list[str] | None:
    if connection.vendor != "postgresql" or not shutil.which("pg_ctlcluster"):
        return None
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not versions:
        return None
    return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "restart"]


def _wait_for_postgres(timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host = connection.settings_dict.get("HOST") or "127.0.0.1"
        port = str(connection.settings_dict.get("PORT") or 5432)
        if subprocess.run(["pg_isready", "-h", host, "-p", port], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    raise TimeoutError("PostgreSQL did not come back")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_ingest_survives_the_database_restarting(tmp_path: Path) -> None:
    restart = _cluster_command()
    if restart is None:
        pytest.skip("needs PostgreSQL managed by pg_ctlcluster on this machine")
    broker = broker_or_skip()
    sessions, turns = 60, 300
    folder = _fleet(Path(settings.DATA_DIR) / "fault-db" / tmp_path.name, sessions=sessions, turns=turns)
    job = _job(folder)
    connection.close()
    try:
        with worker_process(tmp_path / "worker.log", broker=broker):
            send_task("dashboard.tasks.ingest_job", [job.pk], broker=broker, queue="ingest")
            wait_for(lambda: Session.objects.count() >= 5, timeout=30)
            connection.close()
            subprocess.run(restart, check=True, capture_output=True, timeout=60)
            _wait_for_postgres()
            wait_for(lambda: IngestJob.objects.get(pk=job.pk).is_finished, timeout=180)
    finally:
        _wait_for_postgres()
    job.refresh_from_db()
    log = (tmp_path / "worker.log").read_text()
    assert job.status == IngestJob.Status.DONE, job.message + log[-3000:]
    assert "Retry in" in log or "OperationalError" in log, "the restart did not interrupt the ingest"
    assert _stored_rows() == _expected_rows(folder, sessions=sessions, turns=turns)


# --- the broker down during an API ingest -------------------------------------------------------------


def _body(session_ids: list[str], turns: int = 2) -> bytes:
    lines = [line for sid in session_ids for line in dsh_lines(sid, turns=turns)]
    return gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode())


def _post(client: Client, secret: str, body: bytes) -> Any:
    return client.post(
        reverse("api_ingest"),
        data=body,
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {secret}", "Content-Encoding": "gzip"},
    )


def _point_at(app: Any, url: str) -> None:
    """Send the app's next messages to ``url``, dropping connections pooled for the old broker."""
    app.conf.broker_url = url
    app.conf.broker_write_url = url
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    # kombu keeps its own registry of pools by connection; a closed one left there would be handed
    # to the next producer of the whole test run.
    kombu_pools.reset()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_api_with_the_broker_down_answers_503_stores_nothing_and_takes_the_batch_when_it_returns(
    tmp_path: Path,
) -> None:
    broker = broker_or_skip()
    source = Source.objects.create(name="agent-host")
    _, secret = token_create(source=source, name="ci", created_by=None)
    client = Client()
    from dashboard.celery import app

    eager, original, options = (
        app.conf.task_always_eager,
        app.conf.broker_url,
        app.conf.broker_transport_options,
    )
    app.conf.task_always_eager = False
    app.conf.broker_transport_options = {"max_retries": 0}
    _point_at(app, "redis://127.0.0.1:1/0")  # nothing listens on port 1: the broker is down
    try:
        down = _post(client, secret, _body(["api-1", "api-2"]))
        assert down.status_code == 503, down.content
        assert down["Retry-After"] == "30"
        assert "nothing was stored" in down.json()["error"]
        assert _stored_rows()["events"] == [], "a 503 must leave nothing stored"
        app.conf.broker_transport_options = options
        _point_at(app, broker)
        with worker_process(tmp_path / "worker.log", broker=broker):
            again = _post(client, secret, _body(["api-1", "api-2"]))
            assert again.status_code == 200, again.content
            assert again.json()["analysis"] == "queued"
            wait_for(lambda: b"succeeded" in (tmp_path / "worker.log").read_bytes(), timeout=30)
        assert len(_stored_rows()["events"]) == 2 * 5
    finally:
        app.conf.broker_transport_options = options
        _point_at(app, original)
        app.conf.task_always_eager = eager
