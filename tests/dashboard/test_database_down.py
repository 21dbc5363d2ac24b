"""With PostgreSQL down the ingestion API answers 503 JSON with ``Retry-After``, and an ingest
stopped midway by it prints one line naming the database and what it stored, exits 75 and labels
its job; the same ingest run again stores the rest, nothing twice. Real outages: a port nothing
listens on, and a throwaway cluster of the test's own stopped with ``pg_ctl``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.dashboard.logs import write_dsh_log
from tests.dashboard.outages import PostgresCluster, free_port, postgres_cluster

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 240


def _env(database_url: str, data_dir: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "CELERY_BROKER_URL")}
    return {**clean, "DATABASE_URL": database_url, "CACHESCOPE_DATA_DIR": str(data_dir), "LOG_LEVEL": "ERROR"}


def _manage(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


ANSWERS = """
from django.test.utils import setup_test_environment; setup_test_environment()
from django.test import Client; import json
client, auth = Client(), {"Authorization": "Bearer csk_0123456789abcdefghij"}
for path, kind in (("/api/v1/ingest", "application/x-ndjson"), ("/api/v1/batches", "application/x-ndjson"),
                   ("/api/v1/batches/7", ""), ("/v1/logs", "application/json")):
    if kind:
        r = client.post(path, data=b'{"type":"session"}\\n', content_type=kind, headers=auth)
    else:
        r = client.get(path, headers=auth)
    print(json.dumps([path, r.status_code, r["Content-Type"], r.get("Retry-After"), r.content.decode()]))
"""


def test_the_ingestion_api_and_otlp_answer_503_json_with_retry_after_while_the_database_is_down(
    tmp_path: Path,
) -> None:
    env = _env(f"postgres://postgres@127.0.0.1:{free_port()}/gone", tmp_path)  # nothing listens there
    done = _manage(env, "shell", "-c", ANSWERS, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert [answer[0] for answer in answers] == [
        "/api/v1/ingest",
        "/api/v1/batches",
        "/api/v1/batches/7",
        "/v1/logs",
    ]
    for path, status, content_type, retry_after, body in answers:
        assert (status, content_type, retry_after) == (503, "application/json", "30"), path
        assert "the database is unavailable (Connection refused)" in json.loads(body).get(
            "error", json.loads(body).get("message", "")
        ), path
    assert not list((tmp_path / "uploads").glob("api-*"))  # the batch's body was not kept


def _sessions(cluster: PostgresCluster) -> int:
    import psycopg

    try:
        with psycopg.connect(cluster.url("ingest"), connect_timeout=2) as conn:
            return int(conn.execute("SELECT count(*) FROM dashboard_session").fetchone()[0])  # type: ignore[index]
    except psycopg.Error:
        return 0


def _job(cluster: PostgresCluster) -> tuple[str, str, int, int]:
    import psycopg

    with psycopg.connect(cluster.url("ingest")) as conn:
        query = "SELECT status, message, sessions_added, events_added FROM dashboard_ingestjob ORDER BY id"
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0], row[1], row[2], row[3]


def test_an_ingest_stopped_by_postgres_prints_one_line_labels_its_job_and_resumes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for number in range(SESSIONS):
        write_dsh_log(logs / f"s{number:03}" / "session.jsonl", session_id=f"s{number:03}", turns=3)
    with postgres_cluster() as cluster:
        cluster.create_database("ingest")
        env = _env(cluster.url("ingest"), tmp_path / "data")
        assert _manage(env, "migrate", "-v", "0").returncode == 0
        ingest = subprocess.Popen(
            [sys.executable, "manage.py", "ingest", str(logs), "--source", "farm"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while _sessions(cluster) < 20 and ingest.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ingest.poll() is None, "the ingest ended before the database could be stopped under it"
        cluster.stop("fast")
        time.sleep(2)  # the command sees the database gone and starts trying to label its job
        cluster.start()
        _, err = ingest.communicate(timeout=120)

        assert ingest.returncode == 75, err
        [line] = [line for line in err.splitlines() if line.strip()]
        assert line.startswith(
            f"ingest stopped: the database (PostgreSQL ingest at 127.0.0.1:{cluster.port})"
        )
        assert "is unavailable (" in line
        stored = _sessions(cluster)
        assert 20 <= stored < SESSIONS
        assert f"stored before it stopped: {stored:,} sessions ({stored:,} new, 0 updated)" in line
        status, message, sessions_added, events_added = _job(cluster)
        assert status == "failed"
        assert message.startswith("Database unavailable: ")
        assert (sessions_added, events_added) == (stored, stored * 7)

        again = _manage(env, "ingest", str(logs), "--source", "farm", "--json")
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
        # The rerun skips the files stored before the stop on their stat and reads the rest.
        assert summary["sessions_added"] == SESSIONS - stored
        assert _sessions(cluster) == SESSIONS
