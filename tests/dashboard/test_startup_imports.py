"""What starting Django loads: the command line stays fast because Celery, the analysis engine,
and the recorder's HTTP stack load only where used, while workers still find every task and
each ingest still runs its follow-ups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from celery.app.utils import find_app

from dashboard.ingest import followups

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: the test process has imported most of the project already.
_LOADED_AFTER_START = """
import json, sys
import django
django.setup()
from django.core import checks
from django.core.management import load_command_class

load_command_class("dashboard", "ingest")
checks.run_checks()  # what `manage.py check` imports: the URLconf, the template tags, the admin
print(json.dumps(sorted(sys.modules)))
"""

LOADED_ON_FIRST_USE = (
    "aiohttp",
    "celery",
    "celery.worker",
    "kombu",
    "amqp",
    "dashboard.worker.tasks",
    "dashboard.celery",
    "projections.cache.analysis",
    "projections.cache.session_analysis",
    "dashboard.analysis.stored_sessions",
    "dashboard.ingest.files",
    "google.protobuf",
    "dashboard.ingest.otlp.records",
    # The URLconf names its views by dotted path; the pages' modules and the readers behind them
    # load with the first request that needs them.
    "dashboard.ingest.api.views",
    "dashboard.fleet.views",
    "dashboard.requests.views",
    "dashboard.sessions.views",
    "plotly",
    "projections.formats",
    "projections.cache.predict.cache_models",
)


def _modules_after_start(tmp_path: Path) -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "CACHESCOPE_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_AFTER_START],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_starting_django_with_the_urls_and_the_ingest_command_leaves_heavy_modules_unloaded(
    tmp_path: Path,
) -> None:
    loaded = _modules_after_start(tmp_path)
    assert "dashboard.urls" in loaded
    assert "dashboard.management.commands.ingest" in loaded
    assert sorted(loaded.intersection(LOADED_ON_FIRST_USE)) == []


def test_a_worker_started_on_the_package_finds_every_task() -> None:
    # `celery -A dashboard worker` resolves the app this way, then imports the task modules.
    app = find_app("dashboard")
    app.loader.import_default_modules()
    assert {
        "dashboard.tasks.analyse_session",
        "dashboard.tasks.fold_session",
        "dashboard.tasks.fold_sessions",
        "dashboard.tasks.analyse_sessions",
        "dashboard.tasks.ingest_job",
        "dashboard.tasks.refold_chunk",
        "dashboard.tasks.refold_run",
    } <= set(app.tasks)


def test_the_follow_ups_are_registered_when_the_first_is_due() -> None:
    names = {enqueue.__name__ for enqueue in followups._followups()}
    assert {"enqueue_session_folds", "enqueue_session_analyses"} <= names


_LOADED_BY_AN_INGEST = """
import contextlib, io, json, sys
import django
django.setup()
from django.core.management import ManagementUtility, call_command

call_command("migrate", verbosity=0)
before = set(sys.modules)
with contextlib.redirect_stdout(io.StringIO()):
    ManagementUtility(["manage.py", "ingest", sys.argv[1]]).execute()  # as manage.py runs it
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_an_ingest_skips_the_system_checks_that_import_every_view(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "CACHESCOPE_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_BY_AN_INGEST, str(logs)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "dashboard.ingest.incremental.reading" in loaded
    # Nothing to read in the folder: neither the readers nor the writer load.
    assert "dashboard.ingest.files" not in loaded
    assert "projections.formats" not in loaded
    assert "dashboard.urls" not in loaded
    assert not {name for name in loaded if name.startswith("dashboard.views")}


_LOADED_BY_A_TRANSCRIPT_INGEST = """
import contextlib, io, json, sys
import django
django.setup()
from django.core.management import ManagementUtility, call_command

call_command("migrate", verbosity=0)
before = set(sys.modules)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    ManagementUtility(["manage.py", "ingest", "--json", sys.argv[1]]).execute()
print(json.dumps({"loaded": sorted(set(sys.modules) - before), "summary": json.loads(out.getvalue())}))
"""

STORING_LEAVES_UNLOADED = (
    "celery",
    "kombu",
    "dashboard.worker.tasks",
    "dashboard.analysis.stored_sessions",
    "projections.cache.session_analysis",
    "dashboard.refold.folds",
    "projections.folds.registry",
    "projections.cache.render.rendering",
    "dashboard.savings.refresh",
)
"""What storing a Claude Code transcript needs none of, its follow-ups left to the background drain:
the task queue, the analysis, fold and what-if engines, and the renderer of request bodies."""


def test_storing_a_transcript_loads_neither_the_task_queue_nor_the_engines(tmp_path: Path) -> None:
    from tests.dashboard.test_background_followups import wait_for_exit
    from tests.dashboard.transcript_lines import SESSION, conversation

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "CACHESCOPE_DATA_DIR": str(tmp_path / "data"),
        "CACHESCOPE_FOLLOWUPS": "background",
    }
    env.pop("DATABASE_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    project = tmp_path / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(2)))
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_BY_A_TRANSCRIPT_INGEST, str(tmp_path / "projects")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    wait_for_exit(result["summary"]["followups_in_background"]["pid"])
    assert result["summary"]["requests"] == 2
    assert "dashboard.ingest.files" in result["loaded"]
    assert sorted(set(result["loaded"]).intersection(STORING_LEAVES_UNLOADED)) == []
