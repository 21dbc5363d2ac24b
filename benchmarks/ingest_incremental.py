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

each timed until the command returns, its rows stored; the folds and analyses it leaves to its
background drain are waited for before the next run, and the moment that drain ends is printed too;

and ccusage 17 (``ccusage daily --json --offline`` over the same ``projects/`` through
``CLAUDE_CONFIG_DIR``), installed with npm into a temporary folder when ``--ccusage`` is not given
and ``npx --no-install ccusage`` does not answer; the ccusage figures are skipped, saying why, when
it cannot be installed. Each figure is the median of ``--runs`` runs (the first ingest: one run);
the project's modules are compiled to bytecode first, as ``pip install`` leaves them. ccusage runs
just before each ingest, so each ratio compares runs made under the same load; the CPU seconds
(user and system, children included) beside the wall seconds are what a shared machine's load
disturbs least. Prints the figures and their ratios beside the targets of issue 26. Not part of
the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
        found = _ccusage(args.ccusage, scratch)
        ccusage = found if isinstance(found, list) else None
        if ccusage is not None:
            version = subprocess.run([*ccusage, "--version"], capture_output=True, text=True).stdout.strip()
            print(f"ccusage {version}: `ccusage daily --json --offline`, run just before each ingest")
        else:
            print(f"ccusage: skipped ({found})")
        databases: list[tuple[str, str | None]] = [("SQLite (embedded default)", None)]
        if args.postgres:
            databases.append(("PostgreSQL", args.postgres))
        for index, (name, server) in enumerate(databases):
            tree = scratch / f"tree-{index}"
            shutil.copytree(corpus.root, tree)
            _report(name, _measure(tree, scratch, server, args.runs, ccusage))
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


Timing = tuple[float, float]
"""Wall seconds and CPU seconds (user and system, of the child processes) of one run."""


def _timed(command: list[str], cwd: Path | None, env: dict[str, str]) -> tuple[Timing, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (wall, cpu), done.stdout


class Runner:
    """Runs ``manage.py ingest`` on one database, and ccusage just before each run of it, so each
    ratio compares runs made under the same load (the machine may be shared)."""

    def __init__(self, ccusage: list[str] | None, root: Path, env: dict[str, str]) -> None:
        self.ccusage = ccusage
        self.root = root
        self.env = env
        self.figures: dict[str, list[Timing]] = {}
        self.analysed: dict[str, list[float]] = {}

    def ingest(self, label: str, projects: Path, *, expect_requests: int | None) -> None:
        if self.ccusage is not None:
            daily = [*self.ccusage, "daily", "--json", "--offline"]
            timing, _ = _timed(daily, None, os.environ | {"CLAUDE_CONFIG_DIR": str(self.root)})
            self.figures.setdefault(f"ccusage beside {label}", []).append(timing)
        command = [sys.executable, "manage.py", "ingest", "--json", str(projects)]
        started = time.perf_counter()
        timing, out = _timed(command, ROOT, self.env)
        summary = json.loads(out)
        stored = summary["requests"]
        if expect_requests is not None and stored != expect_requests:
            sys.exit(f"{label}: expected {expect_requests} requests stored, the ingest stored {stored}")
        self.figures.setdefault(label, []).append(timing)
        # The folds and analyses the command left to its background drain: waited for, so the next
        # run starts on a quiet machine, and timed from the command's start to the drain's end.
        background = summary.get("followups_in_background")
        if background:
            _wait_for_exit(background["pid"])
        analysed = time.perf_counter() - started
        self.analysed.setdefault(label, []).append(analysed)

    def medians(self) -> dict[str, Timing]:
        figures = {
            label: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
            for label, runs in self.figures.items()
        }
        for label, runs in self.analysed.items():
            figures[f"analysed after {label}"] = (statistics.median(runs), 0.0)
        return figures


def _wait_for_exit(pid: int, timeout: float = 600.0) -> None:
    """Until process ``pid`` (not a child of this one) has ended: gone, or a zombie left to init."""
    deadline = time.monotonic() + timeout
    stat = Path(f"/proc/{pid}/stat")
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)
    sys.exit(f"the background drain {pid} still runs after {timeout:.0f} s")


def _measure(
    tree: Path, scratch: Path, server: str | None, runs: int, ccusage: list[str] | None
) -> dict[str, Timing]:
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
    runner = Runner(ccusage, tree, env)
    runner.ingest("first", projects, expect_requests=None)
    appended = 0
    for _ in range(runs):
        runner.ingest("unchanged", projects, expect_requests=0)
        appended = _append_calls(largest, template, appended, 1)
        runner.ingest("one appended call", projects, expect_requests=1)
        appended = _append_calls(largest, template, appended, 100)
        runner.ingest("100 appended calls", projects, expect_requests=100)
    return runner.medians()


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


def _report(name: str, figures: dict[str, Timing]) -> None:
    print(f"\n{name}: median wall s / CPU s; ratios by wall (by CPU)")
    for label in ("first", "unchanged", "one appended call", "100 appended calls"):
        wall, cpu = figures[label]
        line = f"  {label:20} {wall:7.3f} s / {cpu:6.3f} s"
        reference = figures.get(f"ccusage beside {label}")
        if reference:
            line += f"   ccusage beside it {reference[0]:.3f} s / {reference[1]:.3f} s: "
            line += f"{wall / reference[0]:.2f}x ({cpu / reference[1]:.2f}x)"
        print(line)
        analysed = figures.get(f"analysed after {label}")
        if analysed:
            print(f"  {'':20} folded and analysed (its background drain ended) {analysed[0]:.3f} s in")
    unchanged, appended = figures["unchanged"], figures["one appended call"]
    print(
        f"  one appended call / unchanged: {appended[0] / unchanged[0]:.2f} "
        f"({appended[1] / unchanged[1]:.2f}); target at most 1.5"
    )
    for label, target in (("first", 2.0), ("unchanged", 1.0)):
        reference = figures.get(f"ccusage beside {label}")
        if reference:
            wall, cpu = figures[label]
            ratio = f"{wall / reference[0]:.2f} ({cpu / reference[1]:.2f})"
            print(f"  {label} / ccusage: {ratio}; target at most {target:g}")


if __name__ == "__main__":
    main()
