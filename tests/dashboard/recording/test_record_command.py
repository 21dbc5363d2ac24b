"""``manage.py record`` as it runs: its own process, its recorder in a child, the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard.models import Request, Session
from tests.dashboard.recording.conftest import call
from tests.dashboard.recording.fake_upstream import FakeUpstream
from tests.dashboard.workers import _database_env

ROOT = Path(__file__).resolve().parents[3]


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def still_running(pids: list[int], *, within: float) -> list[str]:
    """The command lines of ``pids`` still running after ``within`` seconds."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in pids if alive(pid)]


@pytest.mark.django_db(transaction=True)
def test_the_command_records_through_its_recorder_process_and_leaves_nothing_running(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    env = {**os.environ, **_database_env(), "CACHESCOPE_DATA_DIR": str(tmp_path), "CELERY_BROKER_URL": ""}
    command = [sys.executable, "manage.py", "record", "--listen", "127.0.0.1:0", "--upstream", upstream.url]
    process = subprocess.Popen(
        [*command, "--source", "cli", "--diagnose"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert "with cache diagnostics" in banner, banner
        port = int(banner.split()[2].rsplit(":", 1)[1])
        first = {"model": "claude-sonnet-4-5-20250929", "messages": [{"role": "user", "content": "hi"}]}
        assert call(port, "/v1/messages", first).status == 200
        second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "ok"}]}
        assert call(port, "/v1/messages", second).status == 200
        helpers = children(process.pid)
        assert helpers, "the recorder runs in a child process"
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    assert process.returncode == 0
    assert "stored 2 call(s), spooled 0, dropped 0" in output
    # multiprocessing's resource tracker ends when it reads the end of its pipe, just after the command.
    assert still_running(helpers, within=5.0) == []
    assert Session.objects.get(source__name="cli").request_count == 2
    assert Request.objects.count() == 2
    [archived] = (tmp_path / "record" / "cli").iterdir()
    assert len(archived.read_text().splitlines()) == 2
