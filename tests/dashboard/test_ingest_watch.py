"""``manage.py ingest --watch``: a call appended to a transcript is stored within seconds, a path that
vanishes is named, and Ctrl-C stops it cleanly. Run as a whole process, as a user runs it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.dashboard.transcript_lines import SESSION, call, conversation

ROOT = Path(__file__).resolve().parents[2]


def command_env(data_dir: Path) -> dict[str, str]:
    """The embedded default (SQLite in ``data_dir``, tasks in-process), whatever the test run uses."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    return env | {"CACHESCOPE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}


class Output:
    """A process's lines as it prints them, gathered by a thread so a test can wait for one."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._gather, args=(process,), daemon=True).start()

    def _gather(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, text: str, seconds: float) -> list[str]:
        """The lines printed until one holds ``text``; fails after ``seconds``."""
        deadline = time.monotonic() + seconds
        printed: list[str] = []
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            printed.append(line)
            self.seen.append(line)
            if text in line:
                return printed
        raise AssertionError(f"no line with {text!r} within {seconds} s; printed: {self.seen}")


def interruptible() -> None:
    """Run in the child before it starts: Ctrl-C stops it as it does in a terminal. A script that
    starts the test run in the background (CI does) has SIGINT ignored, and its children inherit
    that, so the signal the test sends for Ctrl-C would otherwise never reach them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def watched(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = command_env(tmp_path / "data")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    projects = tmp_path / "projects" / "-home-dev-project"
    projects.mkdir(parents=True)
    (projects / f"{SESSION}.jsonl").write_bytes(b"".join(conversation(2)))
    return projects, env


def test_a_call_appended_to_a_watched_transcript_is_stored_within_five_seconds(
    watched: tuple[Path, dict[str, str]],
) -> None:
    projects, env = watched
    with subprocess.Popen(
        [sys.executable, "manage.py", "ingest", "--watch", str(projects.parent)],
        cwd=ROOT,
        env=env,
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        output = Output(process)
        try:
            output.until("stored 2 calls", 60)
            with (projects / f"{SESSION}.jsonl").open("ab") as fh:
                fh.write(b"".join(call(3, read=21_500, write=500)))
            appended = time.monotonic()
            output.until("stored 1 calls", 5)
            assert time.monotonic() - appended < 5

            projects.parent.rename(projects.parent.with_name("gone"))
            gone = output.until("cannot read", 15)
            assert f"{projects.parent}: path: no such file or folder" in gone[-1]
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=20)
        output.until("Stopped watching.", 5)
    assert process.returncode == 0
