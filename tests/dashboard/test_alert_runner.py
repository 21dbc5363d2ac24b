"""The embedded default's runner: a daemon thread that checks the rules on a schedule while the
server runs, started once per process; and the task Celery beat sends."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from dashboard.alerts import runner
from dashboard.models import Alert
from dashboard.worker.tasks import alerts_check_task
from tests.dashboard.alert_fleet import ensure_default_rule, regression


@pytest.fixture
def fresh_runner() -> Any:
    yield
    runner._started = None


def test_the_runner_checks_the_rules_while_it_runs(
    transactional_db: None, ingest_plans: Callable[..., None], fresh_runner: None
) -> None:
    ensure_default_rule()
    ingest_plans(*regression(timezone.now()), analyse=False)

    stop = runner.alerts_runner_start(every=0.2)
    assert stop is not None
    try:
        deadline = time.monotonic() + 30
        while not Alert.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert runner.alerts_runner_start(every=0.2) is None  # one runner a process
    finally:
        stop.set()
        runner._started.join(timeout=10)  # type: ignore[union-attr]

    assert Alert.objects.get().client_version == "claude-code 2.2.0"


def _threads_after_loading_wsgi(tmp_path: Path, **env: str) -> str:
    environment = {
        key: value for key, value in os.environ.items() if key not in ("CELERY_BROKER_URL", "DATABASE_URL")
    }
    environment.update(CACHESCOPE_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="dashboard.settings", **env)
    code = "import threading, dashboard.wsgi; print(sorted(t.name for t in threading.enumerate()))"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_web_server_starts_the_runner_without_a_broker(tmp_path: Path) -> None:
    assert "alerts-runner" in _threads_after_loading_wsgi(tmp_path)


def test_with_a_broker_beat_checks_and_the_web_server_runs_no_runner(tmp_path: Path) -> None:
    assert "alerts-runner" not in _threads_after_loading_wsgi(
        tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:6379/7"
    )


def test_the_runner_is_off_at_zero_seconds(settings: Any, fresh_runner: None) -> None:
    settings.CACHESCOPE_ALERTS_EVERY_SECONDS = 0

    assert runner.alerts_runner_start() is None


def test_beat_sends_the_check_every_interval(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["alerts-check"]

    assert entry["task"] == alerts_check_task.name
    assert entry["schedule"] == settings.CACHESCOPE_ALERTS_EVERY_SECONDS == 300


def test_the_check_task_opens_the_alert(db: None, ingest_plans: Callable[..., None]) -> None:
    ensure_default_rule()
    ingest_plans(*regression(timezone.now()), analyse=False)

    alerts_check_task.delay()

    assert Alert.objects.get().source_name == "alpha"
