"""One very large log (a dsh session and a claude-trace capture, ~500 MB each) through ``manage.py ingest``.

    python benchmarks/large_log.py [--mb 500] [--formats dsh claude-trace] [--databases sqlite postgres]

Each log is built in a temp folder by repeating the real shapes of ``/work/shared/data`` (or of the
repository's generated fixtures when that folder is absent):

- dsh: one session; the events of a real multi-turn session log (chunk rows, tool calls, usage)
  played again turn after turn, with seqs, turn numbers, call ids and times moved on each round;
- claude-trace: one session; a growing conversation whose every main call sends the whole history
  so far (as Claude Code does), with a quota side call every ten calls and a unique request id each.

Each is ingested in a fresh child process (the embedded default SQLite under a scratch data folder,
and PostgreSQL in a scratch database on ``DATABASE_URL``'s server, dropped at the end), with no
broker, so the session's folds and analyses run inside the same command as they do on a laptop.
Printed beside it, the reference: a bare line-by-line ``orjson.loads`` of the same file, storing
nothing. For each: wall time and MB/s, CPU time and MB per CPU-second (the wall figures count other
processes' turns on a busy machine), and the child's peak resident size (``ru_maxrss`` from
``wait4``). Goal: at least 20 MB/s, peak under 500 MB. Not part of the test run.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/data")
DSH_SAMPLE = SHARED / "dsh-real" / "apps_web_tests_snapshots_goal-multi-turn-actions_session.jsonl"
TRACE_SAMPLE = SHARED / "claude-trace" / "log-sample.jsonl"
MB = 1_000_000

_REFERENCE = """
import resource, sys, time
import orjson
started = time.perf_counter()
lines = 0
with open(sys.argv[1], "rb") as log:
    for line in log:
        orjson.loads(line)
        lines += 1
print(lines, time.perf_counter() - started)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=500, help="Size of each log in MB (default 500).")
    parser.add_argument(
        "--formats", nargs="+", default=["dsh", "claude-trace"], choices=["dsh", "claude-trace"]
    )
    parser.add_argument(
        "--databases", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"]
    )
    parser.add_argument("--keep", type=Path, help="Write the logs into this folder and keep them.")
    args = parser.parse_args()
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/cachescope")
    if "postgres" in args.databases and not server.startswith(("postgres://", "postgresql://")):
        sys.exit("DATABASE_URL must name a PostgreSQL server for --databases postgres")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="cachescope-large-log-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for name in args.formats:
            path = folder / ("session.jsonl" if name == "dsh" else "log-large.jsonl")
            if name == "dsh":
                path = folder / "dsh" / "large-session" / "session.jsonl"
            started = time.perf_counter()
            _write(path, _dsh_lines() if name == "dsh" else _trace_lines(), int(args.mb * MB))
            size = path.stat().st_size
            lines = sum(1 for _ in path.open("rb"))
            seconds = time.perf_counter() - started
            print(f"{name}: {size / MB:,.0f} MB, {lines:,} lines, written in {seconds:.0f} s")
            _measure("bare orjson line parse", size, [sys.executable, "-c", _REFERENCE, str(path)], {})
            for database in args.databases:
                with _database(database, server) as env:
                    command = [sys.executable, "manage.py", "ingest", str(path), "--format", name]
                    _measure(f"manage.py ingest, {database}", size, command, env)
            if not args.keep:
                path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


# --- measuring ---------------------------------------------------------------------------------------


def _measure(label: str, size: int, command: list[str], env: dict[str, str]) -> None:
    """Run ``command`` in a child; print its wall time, throughput and peak resident size."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode(errors="replace")
    if child.returncode != 0:
        raise SystemExit(f"{label} failed ({child.returncode}):\n{output[-3000:]}")
    peak = usage.ru_maxrss * 1024  # KiB on Linux
    # CPU seconds too: on a busy machine the wall time counts the other processes' turns.
    cpu = usage.ru_utime + usage.ru_stime
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    print(
        f"  {label:<28} {wall:7.1f} s  {size / MB / wall:6.1f} MB/s  "
        f"CPU {cpu:7.1f} s  {size / MB / cpu:6.1f} MB/CPU-s  peak RSS {peak / MB:6.0f} MB"
        f"   ({_shorten(summary)})"
    )


def _shorten(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|\r", "", text)
    return text[-160:]


@contextlib.contextmanager
def _database(kind: str, server: str) -> Iterator[dict[str, str]]:
    """Environment for a child on a fresh scratch database: the embedded SQLite or PostgreSQL."""
    data = Path(tempfile.mkdtemp(prefix="cachescope-large-log-data-"))
    env = {"CACHESCOPE_DATA_DIR": str(data), "DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    # No broker: the folds and analyses run in the ingesting process, as on the embedded default.
    os.environ.pop("CELERY_BROKER_URL", None)
    scratch = ""
    if kind == "postgres":
        import psycopg

        base, _, name = server.rpartition("/")
        scratch = f"{name or 'cachescope'}_large_log_bench"
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
            conn.execute(f'CREATE DATABASE "{scratch}"')
        env["DATABASE_URL"] = f"{base}/{scratch}"
    else:
        env["DATABASE_URL"] = ""
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=ROOT,
            env={**os.environ, **env},
            check=True,
        )
        yield env
    finally:
        shutil.rmtree(data, ignore_errors=True)
        if scratch:
            import psycopg

            with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


# --- building the logs -------------------------------------------------------------------------------


def _write(path: Path, lines: Iterator[str], target: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            written += len(line.encode())
            if written >= target:
                break


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def _dsh_lines() -> Iterator[str]:
    """A real dsh session's lines after the header, played round after round with moved seqs,
    turns, call ids and times, so the log stays one contiguous, well-formed session."""
    header, *body = [json.loads(line) for line in DSH_SAMPLE.read_text(encoding="utf-8").splitlines()]
    yield _dumps(header)
    seqs = [line.get("seq", line.get("seq0")) for line in body]
    last = max(
        line["seq0"] + len(line["data"].get("texts") or line["data"]["args"]) - 1
        if "seq0" in line
        else line["seq"]
        for line in body
    )
    first_time = min(line.get("time", line.get("time0")) for line in body)
    last_time = max(line.get("time", line.get("time0")) for line in body)
    turns = max((_turn(line) or 0) for line in body)
    assert all(s is not None for s in seqs)
    round_ = 0
    while True:
        seq_shift = round_ * (last + 1)
        time_shift = round_ * (last_time - first_time + 1000)
        turn_shift = round_ * turns
        tag = f"r{round_}"
        for line in body:
            text = _dumps(line)
            # Call and message ids are unique per session: give each round its own.
            text = re.sub(r'"(call_[0-9]+_[A-Za-z0-9]+|cmd-[0-9a-f]+-[0-9]+)"', rf'"\1{tag}"', text)
            moved = json.loads(text)
            if "seq0" in moved:
                moved["seq0"] += seq_shift
                moved["time0"] += time_shift
            else:
                moved["seq"] += seq_shift
                moved["time"] += time_shift
            data = moved.get("data")
            if isinstance(data, dict) and isinstance(data.get("turn"), int):
                data["turn"] += turn_shift
            yield _dumps(moved)
        round_ += 1


def _turn(line: dict[str, Any]) -> int | None:
    data = line.get("data")
    turn = data.get("turn") if isinstance(data, dict) else None
    return turn if isinstance(turn, int) else None


def _trace_lines() -> Iterator[str]:
    """A claude-trace conversation that grows call by call: each main call resends the history."""
    samples = [json.loads(line) for line in TRACE_SAMPLE.read_text(encoding="utf-8").splitlines()]
    main = max(samples, key=lambda s: len(s["request"]["body"].get("messages", [])))
    side = next(s for s in samples if not s["request"]["body"].get("tools"))
    rng = random.Random(7)
    history = list(main["request"]["body"]["messages"])
    started = float(main["request"]["timestamp"])
    words = ("read", "the", "file", "then", "run", "the", "tests", "and", "report", "why", "they", "fail")
    call = 0
    while True:
        call += 1
        moment = started + call * 7.0
        if call % 10 == 0:
            yield _dumps(_exchange(side, call, moment, None))
        turn = " ".join(rng.choice(words) for _ in range(rng.randint(80, 200)))
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {call}: {turn}"}]})
        history.append({"role": "user", "content": [{"type": "text", "text": f"Result {call}: {turn}"}]})
        yield _dumps(_exchange(main, call, moment, history))


def _exchange(sample: dict[str, Any], call: int, moment: float, messages: list[Any] | None) -> dict[str, Any]:
    line = copy.deepcopy({k: v for k, v in sample.items() if k != "request"})
    line["request"] = {**sample["request"], "timestamp": moment}
    if messages is not None:
        line["request"]["body"] = {**sample["request"]["body"], "messages": messages}
    request_id = f"req_bench{call:08d}{'s' if messages is None else 'm'}"
    line["response"]["headers"] = {**line["response"]["headers"], "request-id": request_id}
    line["response"]["timestamp"] = moment + 2.0
    return line


if __name__ == "__main__":
    main()
