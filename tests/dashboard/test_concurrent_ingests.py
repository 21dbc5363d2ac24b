"""Two ``manage.py ingest`` runs over the same folder at once, as a cron job beside a manual run:
both finish, every row is stored once, and between them the two jobs count each session as added
once; an ingest that PostgreSQL aborts in a deadlock runs again and counts what both attempts
stored. On PostgreSQL, with real processes and transactions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from dashboard.models import Event, IngestJob, Session
from tests.dashboard.logs import dsh_lines, write_dsh_log, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
SESSIONS, TURNS = 120, 3

pytestmark = pytest.mark.django_db(transaction=True)


def _folder(root: Path) -> Path:
    for number in range(SESSIONS):
        write_dsh_log(root / f"s{number:03}" / "session.jsonl", session_id=f"s{number:03}", turns=TURNS)
    return root


def _ingest(folder: Path, data_dir: Path) -> subprocess.Popen[str]:
    settings = connection.settings_dict
    url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"
    env = {k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "CELERY_BROKER_URL")}
    env.update(DATABASE_URL=url, CACHESCOPE_DATA_DIR=str(data_dir), LOG_LEVEL="ERROR")
    command = [sys.executable, "manage.py", "ingest", str(folder), "--source", "laptop", "--json"]
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_cli_ingests_of_one_folder_both_finish_and_store_each_row_once(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer: two ingests take turns and cannot deadlock")
    folder = _folder(tmp_path / "projects")
    connection.close()
    runs = [_ingest(folder, tmp_path / "data"), _ingest(folder, tmp_path / "data")]
    answers = [run.communicate(timeout=600) for run in runs]

    for run, (_, err) in zip(runs, answers, strict=True):
        assert run.returncode == 0, err[-3000:]
    summaries = [json.loads(out) for out, _ in answers]
    assert Session.objects.count() == SESSIONS
    assert Event.objects.count() == SESSIONS * (1 + 2 * TURNS)
    assert sum(summary["sessions_added"] for summary in summaries) == SESSIONS
    assert sum(summary["events"] for summary in summaries) == SESSIONS * (1 + 2 * TURNS)
    jobs = IngestJob.objects.order_by("pk")
    assert [job.status for job in jobs] == ["done", "done"]
    assert sum(job.sessions_added for job in jobs) == SESSIONS


# How the job finds the four logs (each of one turn, stored before the job, now of three turns):
# what the job counts on itself (sessions added, updated, events added, duplicates) and the files it
# read whole, took up or read whole as rewritten. The retry must not change any of these figures.
DEADLOCKED_INGESTS = {
    # Stored by a plain ingest, which keeps no offsets: every line is read again, the old ones are
    # duplicates.
    "read whole": ("You are terse.", False, (0, 4, 16, 12), (4, 0, 0)),
    # Grown since an incremental ingest: only the new lines are read.
    "taken up": ("You are terse.", True, (0, 4, 16, 0), (0, 4, 0)),
    # Rewritten since: each session is deleted and stored anew from the new bytes, once.
    "rewritten": ("Be brief.", True, (4, 0, 28, 0), (4, 0, 4)),
}


@pytest.mark.parametrize(
    ("system", "incremental", "counts", "files"), DEADLOCKED_INGESTS.values(), ids=DEADLOCKED_INGESTS
)
def test_a_deadlocked_cli_ingest_runs_again_and_counts_what_each_attempt_stored(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    system: str,
    incremental: bool,
    counts: tuple[int, int, int, int],
    files: tuple[int, int, int],
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("a deadlock needs two PostgreSQL transactions")
    from dashboard.ingest import files as ingest_files
    from dashboard.ingest.files import ingest_paths
    from dashboard.ingest.jobs import ingest_job_claim, ingest_job_run
    from tests.dashboard.postgres import other_connection

    folder = tmp_path / "projects"
    names = ["a", "b", "s1", "s2"]
    for name in names:
        write_dsh_log(folder / name / "session.jsonl", session_id=name, turns=1)
    ingest_paths(paths=[folder], source_name="laptop", incremental=incremental)
    for name in names:  # every log has changed since: each group writes to its sessions
        write_jsonl(folder / name / "session.jsonl", dsh_lines(name, turns=3, system=system))
    monkeypatch.setattr(ingest_files, "GROUP_SESSIONS", 2)  # groups (a, b) and (s1, s2)
    ids = dict(Session.objects.values_list("external_id", "pk"))
    job = IngestJob.objects.create(kind=IngestJob.Kind.COMMAND, source_name="laptop", paths=[str(folder)])
    assert ingest_job_claim(job_id=job.pk, owner="cli")

    # Another writer holds s2 and, once the ingest holds s1 and waits for s2, asks for s1: a circle of
    # waits. Its own detector waits 10 s, the ingest's 1 s, so the ingest is the one PostgreSQL aborts.
    other = other_connection()
    other.execute("BEGIN")
    other.execute("SET LOCAL deadlock_timeout = '10s'")
    other.execute("SELECT 1 FROM dashboard_session WHERE id = %s FOR UPDATE", [ids["s2"]])

    def close_the_circle() -> None:
        waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
        watcher = other_connection()
        deadline = time.monotonic() + 30
        while watcher.execute(waiting).fetchone()[0] == 0 and time.monotonic() < deadline:  # type: ignore[index]
            time.sleep(0.05)
        watcher.close()
        other.execute("SELECT 1 FROM dashboard_session WHERE id = %s FOR UPDATE", [ids["s1"]])
        other.execute("COMMIT")

    thread = threading.Thread(target=close_the_circle)
    thread.start()
    summary = ingest_job_run(job_id=job.pk, owner="cli")
    thread.join(timeout=60)
    other.close()

    job.refresh_from_db()
    assert job.status == "done"
    assert summary.errors == []
    # The job's figures are those of one ingest that did not deadlock: what the first attempt stored
    # is the job's own, not a duplicate, and no file is counted twice.
    assert (summary.sessions_added, summary.sessions_updated, summary.sessions_unchanged) == (
        counts[0],
        counts[1],
        0,
    )
    assert (job.sessions_added, job.sessions_updated, job.events_added, job.duplicate_events) == counts
    assert summary.files is not None
    assert (summary.files.whole, summary.files.resumed, summary.files.rewritten) == files
    assert Event.objects.count() == len(names) * 7
    assert Session.objects.count() == len(names)
