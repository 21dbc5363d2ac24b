"""Where tasks run in-process, ``manage.py ingest`` returns once its rows are stored and leaves their
folds and analyses to one background drain; ``report`` waits for it; ``--wait`` runs them first; a
drain that meets a failing session leaves it in the outbox and analyses the others."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from dashboard.ingest import followups
from dashboard.ingest.files import ingest_paths
from dashboard.ingest.followups import followups_deferred
from dashboard.models import PendingFollowup, ProjectionRow, RequestAnalysis, Session
from dashboard.worker.drain import outbox_drain
from tests.dashboard.logs import write_dsh_log
from tests.dashboard.transcript_lines import SESSION, conversation

ROOT = Path(__file__).resolve().parents[2]


def _embedded_env(data: Path) -> dict[str, str]:
    """The embedded default in a data folder of its own, follow-ups in the background as a user has them."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    return env | {"CACHESCOPE_DATA_DIR": str(data), "CACHESCOPE_FOLLOWUPS": "background"}


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )


@pytest.fixture
def embedded(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A migrated embedded default and a folder holding one transcript of three calls."""
    env = _embedded_env(tmp_path / "data")
    _manage(env, "migrate", "-v0")
    project = tmp_path / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(3)))
    return env, tmp_path / "projects"


COUNTS = (
    "SELECT (SELECT count(*) FROM dashboard_request), (SELECT count(*) FROM dashboard_requestanalysis),"
    " (SELECT count(*) FROM dashboard_pendingfollowup)"
)


def _counts(data: Path) -> tuple[int, int, int]:
    """Requests, their analyses and outbox rows in the embedded default's database file."""
    with sqlite3.connect(data / "cachescope.sqlite3") as db:
        requests, analyses, outbox = db.execute(COUNTS).fetchone()
    return requests, analyses, outbox


def wait_for_exit(pid: int, timeout: float = 60) -> None:
    """Until process ``pid``, which is not this one's child, has ended (gone, or a zombie)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"the background drain {pid} still runs after {timeout} s")


def test_the_command_returns_with_its_rows_stored_and_a_drain_analyses_them(
    embedded: tuple[dict[str, str], Path],
) -> None:
    env, projects = embedded
    data = Path(env["CACHESCOPE_DATA_DIR"])

    done = _manage(env, "ingest", "--json", str(projects))

    summary = json.loads(done.stdout)
    assert summary["requests"] == 3
    background = summary["followups_in_background"]
    assert background["sessions"] == 1
    wait_for_exit(background["pid"])
    assert _counts(data) == (3, 3, 0)
    assert (data / "followups.log").read_text() == ""  # the drain wrote no error


def test_the_plain_command_says_what_runs_in_the_background(embedded: tuple[dict[str, str], Path]) -> None:
    env, projects = embedded
    done = _manage(env, "ingest", str(projects))
    assert "Folding and analysing 1 sessions in the background (process " in done.stdout
    # The report waits for that drain, so its costs are those of the analysed session.
    rows = json.loads(_manage(env, "report", "--json").stdout)
    assert [(row["session_id"], row["requests"]) for row in rows] == [(SESSION, 3)]
    assert rows[0]["cost_usd"] is not None
    assert _counts(Path(env["CACHESCOPE_DATA_DIR"])) == (3, 3, 0)


def test_wait_folds_and_analyses_before_the_command_returns(embedded: tuple[dict[str, str], Path]) -> None:
    env, projects = embedded
    summary = json.loads(_manage(env, "ingest", "--wait", "--json", str(projects)).stdout)
    assert summary["followups_in_background"] is None
    assert _counts(Path(env["CACHESCOPE_DATA_DIR"])) == (3, 3, 0)


def test_inline_followups_start_no_drain(embedded: tuple[dict[str, str], Path]) -> None:
    env, projects = embedded
    env = env | {"CACHESCOPE_FOLLOWUPS": "inline"}
    summary = json.loads(_manage(env, "ingest", "--json", str(projects)).stdout)
    assert summary["followups_in_background"] is None
    assert _counts(Path(env["CACHESCOPE_DATA_DIR"])) == (3, 3, 0)


def test_an_unknown_followups_setting_stops_the_command_naming_it(
    embedded: tuple[dict[str, str], Path],
) -> None:
    env, projects = embedded
    env = env | {"CACHESCOPE_FOLLOWUPS": "later"}
    command = [sys.executable, "manage.py", "ingest", str(projects)]
    failed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert failed.returncode != 0
    assert "CACHESCOPE_FOLLOWUPS='later' is not one of: background, inline" in failed.stderr


def _deferred_ingest(tmp_path: Path, *names: str) -> list[int]:
    for name in names:
        write_dsh_log(tmp_path / name / "session.jsonl", session_id=name, turns=2)
    with followups_deferred() as deferred:
        summary = ingest_paths(paths=[tmp_path], source_name="farm")
    assert summary.sessions_added == len(names)
    return deferred


@pytest.mark.django_db(transaction=True)
def test_deferred_followups_run_nothing_and_keep_their_outbox_rows(tmp_path: Path) -> None:
    deferred = _deferred_ingest(tmp_path, "s1", "s2")
    ids = sorted(Session.objects.values_list("pk", flat=True))
    assert sorted(deferred) == ids
    assert sorted(PendingFollowup.objects.values_list("session_id", flat=True)) == ids
    assert not ProjectionRow.objects.exists()
    assert not RequestAnalysis.objects.exists()

    assert outbox_drain() == 2
    assert not PendingFollowup.objects.exists()
    assert ProjectionRow.objects.values("session_id").distinct().count() == 2
    assert RequestAnalysis.objects.values("request__session_id").distinct().count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_drain_leaves_a_failing_session_in_the_outbox_and_runs_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _deferred_ingest(tmp_path, "s1", "s2", "s3")
    failing = Session.objects.get(external_id="s2").pk

    def fails_on_s2(session_ids: list[int]) -> None:
        if failing in session_ids:
            raise ValueError("a fold that cannot read this session")

    # First, so the session's batch fails before any fold or analysis of it ran.
    monkeypatch.setattr(followups, "_FOLLOWUPS", [fails_on_s2, *followups._followups()])

    assert outbox_drain() == 2
    assert list(PendingFollowup.objects.values_list("session_id", flat=True)) == [failing]
    analysed = set(RequestAnalysis.objects.values_list("request__session_id", flat=True))
    assert analysed == set(Session.objects.exclude(pk=failing).values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_the_report_command_runs_what_the_outbox_holds_before_reading(tmp_path: Path) -> None:
    _deferred_ingest(tmp_path, "s1")
    assert PendingFollowup.objects.exists()
    call_command("report", "--json", stdout=io.StringIO())
    assert not PendingFollowup.objects.exists()
    assert RequestAnalysis.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_drain_that_cannot_start_runs_the_followups_in_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.worker import drain as background

    def no_process() -> int:
        raise OSError("[Errno 11] Resource temporarily unavailable")

    monkeypatch.setattr(background, "followups_in_background", lambda: True)
    monkeypatch.setattr(background, "drain_start", no_process)
    write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2)
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", "--json", str(tmp_path), stdout=out, stderr=err)

    assert json.loads(out.getvalue())["followups_in_background"] is None
    assert "could not start in the background ([Errno 11] Resource temporarily unavailable)" in err.getvalue()
    assert not PendingFollowup.objects.exists()
    assert RequestAnalysis.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_drain_without_a_writable_data_folder_runs_unlocked(tmp_path: Path, settings: Any) -> None:
    _deferred_ingest(tmp_path, "s1")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the data folder should be")
    settings.DATA_DIR = blocked
    assert outbox_drain() == 1
    assert not PendingFollowup.objects.exists()
