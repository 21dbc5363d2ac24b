"""Ingest that costs only what is new: ``manage.py ingest`` as whole processes beside ccusage.

    python benchmarks/ingest_incremental.py [--mb 16] [--runs 3] [--postgres URL] [--ccusage PATH]

Copies the real Claude Code transcripts under ../shared/data into a temporary ``projects/`` tree of
about ``--mb`` megabytes (``claude_code_corpus.py``), then, on the embedded default (SQLite, tasks
in-process) and on PostgreSQL, each in a fresh migrated database (migration untimed), times:

- first: ``manage.py ingest projects/`` into the empty database, folds and analyses included;
- unchanged: the same command again, nothing having changed;
- one appended call: a call (a real transcript's last call, under new ids) appended to the largest
  transcript, then the command; it must store exactly that call;
- 100 appended calls: a hundred such calls, then the command; it must store exactly those;

and ccusage 17 (``ccusage daily --json --offline`` over the same ``projects/`` through
``CLAUDE_CONFIG_DIR``), installed with npm into a temporary folder when ``--ccusage`` is not given
and ``npx --no-install ccusage`` does not answer; the ccusage figures are skipped, saying why, when
it cannot be installed. Each figure is the median of ``--runs`` runs; the project's modules are
compiled to bytecode first, as ``pip install`` leaves them. Prints the figures and their ratios
beside the targets of issue 26. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from benchmarks.claude_code_corpus import build_corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=16, help="Size of the transcript tree in megabytes.")
    parser.add_argument("--runs", type=int, default=3, help="Runs of each timing; the median is printed.")
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432/postgres",
        help="A PostgreSQL server URL; a scratch database is created on it ('' to skip PostgreSQL).",
    )
    parser.add_argument("--ccusage", help="A ccusage executable (default: npx's, or npm-installed here).")
    parser.add_argument("--source", type=Path, default=SHARED / "claude-code", help="The real transcripts.")
    args = parser.parse_args()
    if not args.source.is_dir():
        sys.exit(f"skipped: {args.source} is absent (the real transcripts are needed)")

    scratch = Path(tempfile.mkdtemp(prefix="ingest-incremental-"))
    try:
        _compile_bytecode()
        corpus = build_corpus(args.source, scratch / "claude", target_bytes=int(args.mb * 1e6))
        print(f"{len(corpus.files)} transcripts, {corpus.bytes / 1e6:.1f} MB, in {corpus.projects}")
        ccusage = _ccusage(args.ccusage, scratch)
        reference = _time_ccusage(ccusage, corpus.root, args.runs) if isinstance(ccusage, list) else None
        if reference is None:
            print(f"ccusage: skipped ({ccusage})")
        else:
            print(f"ccusage daily --json: {reference:.3f} s")
        databases = [("SQLite (embedded default)", None)]
        if args.postgres:
            databases.append(("PostgreSQL", args.postgres))
        for name, server in databases:
            tree = scratch / f"tree-{len(name)}"
            shutil.copytree(corpus.root, tree)
            _report(name, _measure(tree, scratch, server, args.runs), reference)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _compile_bytecode() -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "dashboard", "projections"],
        cwd=ROOT,
        check=True,
        env=_env({}),
        stdout=subprocess.DEVNULL,
    )


def _env(extra: dict[str, str]) -> dict[str, str]:
    """A user's environment: bytecode kept (an installed package has it), no test or broker settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "PYTHONDONTWRITEBYTECODE", "CACHESCOPE_DATA_DIR")
    }
    return env | extra


def _ccusage(given: str | None, scratch: Path) -> list[str] | str:
    """The ccusage command line, or why there is none."""
    if given:
        return [given]
    npx = shutil.which("npx")
    if (
        npx
        and subprocess.run([npx, "--no-install", "ccusage", "--version"], capture_output=True).returncode == 0
    ):
        return [npx, "--no-install", "ccusage"]
    npm = shutil.which("npm")
    if not npm:
        return "npm is not installed"
    prefix = scratch / "npm"
    installed = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "ccusage@17"],
        capture_output=True,
        text=True,
    )
    binary = prefix / "node_modules" / ".bin" / "ccusage"
    if installed.returncode != 0 or not binary.exists():
        return f"npm install ccusage@17 failed: {installed.stderr.strip()[-300:]}"
    return [str(binary)]


def _time_ccusage(command: list[str], root: Path, runs: int) -> float:
    env = os.environ | {"CLAUDE_CONFIG_DIR": str(root)}
    version = subprocess.run([*command, "--version"], capture_output=True, text=True, env=env).stdout.strip()
    print(f"ccusage {version}")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [*command, "daily", "--json", "--offline"], env=env, check=True, stdout=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _measure(tree: Path, scratch: Path, server: str | None, runs: int) -> dict[str, float]:
    """The four timings on a fresh database (SQLite in its own folder, or a scratch PostgreSQL one)."""
    data = Path(tempfile.mkdtemp(dir=scratch))
    extra = {"CACHESCOPE_DATA_DIR": str(data)}
    if server:
        extra["DATABASE_URL"] = _scratch_postgres(server)
    env = _env(extra)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    projects = tree / "projects"
    largest = max(projects.rglob("*.jsonl"), key=lambda path: path.stat().st_size)
    template = _last_call(largest)
    figures: dict[str, list[float]] = {
        "first": [],
        "unchanged": [],
        "one appended call": [],
        "100 appended calls": [],
    }
    figures["first"].append(_ingest(projects, env, expect_requests=None))
    appended = 0
    for _ in range(runs):
        figures["unchanged"].append(_ingest(projects, env, expect_requests=0))
        appended = _append_calls(largest, template, appended, 1)
        figures["one appended call"].append(_ingest(projects, env, expect_requests=1))
        appended = _append_calls(largest, template, appended, 100)
        figures["100 appended calls"].append(_ingest(projects, env, expect_requests=100))
    return {name: statistics.median(values) for name, values in figures.items()}


def _ingest(projects: Path, env: dict[str, str], *, expect_requests: int | None) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", "ingest", "--json", str(projects)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    result = json.loads(done.stdout)
    if expect_requests is not None and result["requests"] != expect_requests:
        sys.exit(
            f"expected {expect_requests} requests stored, the ingest stored {result['requests']}: {result}"
        )
    return elapsed


def _last_call(transcript: Path) -> list[dict[str, object]]:
    """The lines of the transcript's last call with usage: what an appended call looks like."""
    lines = [json.loads(line) for line in transcript.read_bytes().splitlines() if line.strip()]
    calls = [
        line for line in lines if line.get("type") == "assistant" and line.get("message", {}).get("usage")
    ]
    if not calls:
        sys.exit(f"{transcript} holds no call to copy")
    last = calls[-1]
    key = (last["message"].get("id"), last.get("requestId"))
    return [line for line in calls if (line["message"].get("id"), line.get("requestId")) == key]


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _append_calls(transcript: Path, template: list[dict[str, object]], before: int, count: int) -> int:
    """Append ``count`` copies of the template call under new ids, as one write each; the new total."""
    for number in range(before, before + count):
        lines = []
        for index, value in enumerate(template):
            line = json.loads(json.dumps(value))
            line["uuid"] = f"00000000-0000-4000-8000-{number:08d}{index:04d}"
            line["message"]["id"] = f"msg_appended{number:06d}"
            line["requestId"] = f"req_appended{number:06d}"
            lines.append(json.dumps(line, separators=(",", ":")) + "\n")
        with transcript.open("a") as fh:
            fh.write("".join(lines))
    return before + count


def _scratch_postgres(server_url: str) -> str:
    import psycopg

    name = f"cachescope_incremental_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def _report(name: str, figures: dict[str, float], ccusage: float | None) -> None:
    print(f"\n{name}")
    for label, seconds in figures.items():
        against = f"  {seconds / ccusage:.2f}x ccusage" if ccusage else ""
        print(f"  {label:20} {seconds:7.3f} s{against}")
    unchanged = figures["unchanged"]
    appended = figures["one appended call"] / unchanged
    print(f"  one appended call / unchanged: {appended:.2f} (target at most 1.5)")
    if ccusage:
        print(f"  first / ccusage: {figures['first'] / ccusage:.2f} (target at most 2)")
        print(f"  unchanged / ccusage: {unchanged / ccusage:.2f} (target at most 1)")


if __name__ == "__main__":
    main()
