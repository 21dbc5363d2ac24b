"""A real Celery worker process for the tests, on a real broker, against the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

ROOT = Path(__file__).resolve().parents[2]
BROKER_URL = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
QUEUES = "ingest,fold,refold,default"


def broker_or_skip() -> str:
    """The test broker URL, emptied of old messages; skip the test where no broker answers."""
    try:
        with Connection(BROKER_URL, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1)
            for queue in QUEUES.split(","):
                conn.default_channel.queue_purge(queue) if _queue_exists(conn, queue) else None
    except Exception as error:
        pytest.skip(f"no Celery broker at {BROKER_URL}: {error}")
    return BROKER_URL


def _queue_exists(conn: Connection, queue: str) -> bool:
    try:
        conn.default_channel.queue_declare(queue=queue, passive=True)
    except Exception:
        return False
    return True


def _database_env() -> dict[str, str]:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return {"DATABASE_URL": f"sqlite:///{db['NAME']}"}
    user = db.get("USER") or "postgres"
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return {"DATABASE_URL": f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"}


@contextmanager
def worker_process(log: Path, *, broker: str, queues: str = QUEUES) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``celery worker`` on ``queues`` and wait until it is ready; stop it on exit."""
    env = {
        **os.environ,
        **_database_env(),
        "CELERY_BROKER_URL": broker,
        "CACHESCOPE_DATA_DIR": str(settings.DATA_DIR),
    }
    name = f"test-{uuid.uuid4().hex[:8]}@%h"
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "dashboard",
        "worker",
        "--pool",
        "solo",
        "-Q",
        queues,
        "-n",
        name,
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: b" ready." in log.read_bytes() or process.poll() is not None, timeout=60)
        if process.poll() is not None:
            raise RuntimeError(f"the worker exited at start-up:\n{log.read_text()}")
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                # A warm shutdown waits for the task in hand (an analysis the ingest queued); on a
                # loaded machine that outlasts the wait, so the worker is killed and reaped.
                process.kill()
                process.wait()


def _wait_for(condition, *, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout} s")
        time.sleep(0.2)


def wait_for(condition, *, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    _wait_for(condition, timeout=timeout)


def send_task(name: str, args: list[object], *, broker: str, queue: str, task_id: str | None = None) -> None:
    """Send task ``name`` through ``broker`` to a real worker, even where tasks run in-process.

    ``task_id`` sends a message the broker already delivered once, as it does again after a
    visibility timeout.
    """
    from dashboard.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with app.connection_for_write(broker) as conn:
            app.send_task(name, args=args, connection=conn, queue=queue, task_id=task_id)
    finally:
        app.conf.task_always_eager = eager
