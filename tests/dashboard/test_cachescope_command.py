"""The ``cachescope`` console command, from a fresh (non-editable) install of the package, against a
home folder of its own: ``--help``, and with no arguments a dashboard of the home's agent logs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.dashboard.test_background_followups import wait_for_exit
from tests.dashboard.test_ingest_watch import Output, interruptible
from tests.dashboard.transcript_lines import SESSION, conversation

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a new environment where the package is installed from a copy of the
    source tree, as ``pip install`` installs it; its dependencies are those of this environment."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    env = work / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    (purelib,) = (env / "lib").glob("python*/site-packages")
    (purelib / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [
            str(env / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            str(source),
        ],
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
    )
    return env / "bin"


def home_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "CACHESCOPE_DATA_DIR",
            "STATIC_ROOT",
            "DJANGO_SETTINGS_MODULE",
        )
        and not k.startswith(("CLAUDE_", "CODEX_", "XDG_"))
    }
    return env | {"HOME": str(home), "PYTHONUNBUFFERED": "1"}


def test_cachescope_help_names_its_commands(installed: Path, tmp_path: Path) -> None:
    shown = subprocess.run(
        [str(installed / "cachescope"), "--help"],
        capture_output=True,
        text=True,
        env=home_env(tmp_path),
        check=True,
    )

    assert "usage: cachescope" in shown.stdout
    assert "ingest PATH..." in shown.stdout
    assert not (tmp_path / ".local").exists()  # help sets nothing up


def test_cachescope_serves_the_home_s_claude_code_logs_with_a_printed_login(
    installed: Path, tmp_path: Path
) -> None:
    project = tmp_path / ".claude" / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(2)))

    with subprocess.Popen(
        [str(installed / "cachescope"), "--port", "0"],
        cwd=tmp_path,
        env=home_env(tmp_path),
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        output = Output(process)
        try:
            printed = output.until("Cachescope is at", 180)
            url_line = printed[-1]
            output.until("Starting development server", 30)
            login = urllib.request.urlopen(  # noqa: S310 (the server's own http URL)
                url_line.split(" at ")[1].split(" ")[0] + "accounts/login/", timeout=10
            )
            page = login.read().decode()
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=20)

    assert any("stored 2 calls" in line for line in printed)
    assert "log in as cachescope / " in url_line
    assert login.status == 200
    assert 'name="password"' in page
    assert (tmp_path / ".local" / "share" / "cachescope" / "cachescope.sqlite3").is_file()


def test_cachescope_report_is_the_report_command_over_what_cachescope_ingested(
    installed: Path, tmp_path: Path
) -> None:
    project = tmp_path / "claude-config" / "projects" / "-home-dev-project"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(3)))
    env = home_env(tmp_path) | {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}

    set_up = subprocess.run(
        [str(installed / "cachescope"), "--no-serve"], env=env, capture_output=True, text=True, check=True
    )
    report = subprocess.run(
        [str(installed / "cachescope"), "report", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert "stored 3 calls" in set_up.stdout
    rows = json.loads(report.stdout)
    assert [(row["session_id"], row["requests"]) for row in rows] == [(SESSION, 3)]


def test_cachescope_ingest_leaves_its_analyses_to_a_drain_that_runs_from_the_installed_package(
    installed: Path, tmp_path: Path
) -> None:
    project = tmp_path / "logs" / "-home-dev-project"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(2)))
    env = home_env(tmp_path) | {"CACHESCOPE_FOLLOWUPS": "background"}
    subprocess.run([str(installed / "cachescope"), "--no-serve", "--no-watch"], env=env, check=True)

    ingested = subprocess.run(
        [str(installed / "cachescope"), "ingest", "--json", str(tmp_path / "logs")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    background = json.loads(ingested.stdout)["followups_in_background"]
    assert background["sessions"] == 1
    wait_for_exit(background["pid"])
    data = tmp_path / ".local" / "share" / "cachescope"
    assert (data / "followups.log").read_text() == ""
    with sqlite3.connect(data / "cachescope.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM dashboard_requestanalysis").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM dashboard_pendingfollowup").fetchone() == (0,)
