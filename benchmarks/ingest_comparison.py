"""``manage.py ingest`` of real Claude Code transcripts beside a bare parser, as a user waits for each.

Every command runs in a fresh process and is timed from outside (interpreter start included), run
by run in turn, so a machine busy with other work slows each of them alike; the table shows the
median wall time and the median CPU time (user + system) of the child, which another process on
the machine disturbs less. The children write their bytecode to a scratch folder
(``PYTHONPYCACHEPREFIX``) and run once untimed first, so the figures are those of an installed
package, whose modules are compiled once, whatever ``PYTHONDONTWRITEBYTECODE`` says here.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.claude_code_corpus import Corpus, build_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRATCH_DATABASE = "cachescope_ingestperf"
"""The PostgreSQL database each run drops and creates, unless ``--scratch-database`` names another."""

_PARSE = """
import sys, pathlib, {module}
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.jsonl")):
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                {module}.loads(line)
"""


@dataclass
class Command:
    name: str
    argv: list[str]
    env: dict[str, str]
    prepare: Callable[[], None] = lambda: None
    """Untimed work before each run (a fresh database)."""
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    output: str = ""

    def run(self) -> None:
        self.prepare()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(self.argv, env=self.env, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            raise SystemExit(f"{self.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        self.walls.append(wall)
        self.cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        self.output = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def claude_code_comparison(
    source: Path,
    *,
    target_bytes: int,
    runs: int,
    postgres: str,
    scratch_database: str = SCRATCH_DATABASE,
    against: Path | None = None,
) -> None:
    """Time each command ``runs`` times in turn; with ``against`` (the checkout of an earlier commit),
    that tree's ingest too, into databases of its own, so a machine's drift touches both alike."""
    with tempfile.TemporaryDirectory(prefix="cachescope-cc-bench-") as scratch_name:
        scratch = Path(scratch_name)
        corpus = build_corpus(source, scratch / "claude", target_bytes=target_bytes)
        _describe(corpus)
        env = _child_env(scratch)
        commands = [
            Command("orjson parse (python -c)", _parse_argv("orjson", corpus), env),
            Command("json parse (python -c)", _parse_argv("json", corpus), env),
        ]
        ccusage = _ccusage(corpus, env)
        if ccusage:
            commands.append(ccusage)
        trees = [(ROOT, "", scratch)]
        if against:
            trees.append((against, f" ({against.name})", scratch / "against"))
        for root, label, folder in trees:
            sqlite_env = env | _sqlite_env(folder)
            commands.append(_ingest_command(f"ingest, SQLite{label}", corpus, sqlite_env, root))
        for root, label, folder in trees:
            database = scratch_database + ("_against" if label else "")
            pg_env = _postgres_env(postgres, folder, database)
            if pg_env:
                commands.append(_ingest_command(f"ingest, PostgreSQL{label}", corpus, env | pg_env, root))
        for command in commands:
            command.run()  # untimed: compiles the bytecode and warms the page cache
            command.walls.clear()
            command.cpus.clear()
        for _ in range(runs):
            for command in commands:
                command.run()
        _report(commands, runs, ccusage is not None)


def _describe(corpus: Corpus) -> None:
    print(
        f"Claude Code corpus: {len(corpus.files)} files (the real transcripts copied {corpus.copies} times), "
        f"{corpus.bytes / 1e6:.1f} MB"
    )


def _child_env(scratch: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(scratch / "pycache")}
    for name in ("PYTHONDONTWRITEBYTECODE", "DATABASE_URL", "CELERY_BROKER_URL", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    return env


def _parse_argv(module: str, corpus: Corpus) -> list[str]:
    return [sys.executable, "-c", _PARSE.format(module=module), str(corpus.projects)]


def _ccusage(corpus: Corpus, env: dict[str, str]) -> Command | None:
    npx = shutil.which("npx")
    if npx is None:
        print("(no ccusage run: npx is not installed)")
        return None
    probe = subprocess.run(
        [npx, "--no-install", "ccusage", "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    if probe.returncode:
        print("(no ccusage run: `npx --no-install ccusage` is not installed here)")
        return None
    ccusage_env = env | {"CLAUDE_CONFIG_DIR": str(corpus.root)}
    argv = [npx, "--no-install", "ccusage", "daily", "--offline", "--json"]
    return Command(f"ccusage {probe.stdout.strip()}", argv, ccusage_env)


def _sqlite_env(scratch: Path) -> dict[str, str]:
    return {"CACHESCOPE_DATA_DIR": str(scratch / "sqlite")}


def _postgres_env(server_url: str, scratch: Path, database: str) -> dict[str, str] | None:
    try:
        import psycopg

        with psycopg.connect(server_url, autocommit=True, connect_timeout=3):
            pass
    except Exception as error:
        print(f"(no PostgreSQL run: {error})")
        return None
    url = server_url.rsplit("/", 1)[0] + "/" + database
    return {
        "CACHESCOPE_DATA_DIR": str(scratch / "pg"),
        "DATABASE_URL": url,
        "_SERVER_URL": server_url,
        "_DATABASE": database,
    }


def _ingest_command(name: str, corpus: Corpus, env: dict[str, str], root: Path = ROOT) -> Command:
    manage = [sys.executable, str(root / "manage.py")]
    server_url = env.pop("_SERVER_URL", "")
    database = env.pop("_DATABASE", "")

    def fresh_database() -> None:
        if server_url:
            import psycopg

            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {database}")
        else:
            shutil.rmtree(env["CACHESCOPE_DATA_DIR"], ignore_errors=True)
            Path(env["CACHESCOPE_DATA_DIR"]).mkdir(parents=True)
        subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)

    return Command(name, [*manage, "ingest", str(corpus.projects)], env, prepare=fresh_database)


def _report(commands: list[Command], runs: int, with_ccusage: bool) -> None:
    reference = commands[0]
    ccusage = commands[2] if with_ccusage else None
    print(f"median of {runs} runs each, interleaved; ratios of the median wall time")
    header = f"{'command':<28} {'wall s':>8} {'cpu s':>7} {'x orjson':>9}"
    print(header + (f" {'x ccusage':>10}" if ccusage else ""))
    for command in commands:
        wall, cpu = statistics.median(command.walls), statistics.median(command.cpus)
        line = f"{command.name:<28} {wall:8.2f} {cpu:7.2f} {wall / statistics.median(reference.walls):9.1f}"
        if ccusage:
            line += f" {wall / statistics.median(ccusage.walls):10.2f}"
        print(line)
    for command in commands:
        if command.name.startswith("ingest"):
            print(f"  {command.name}: {command.output}")


def claude_code_profile(
    source: Path, *, target_bytes: int, postgres: str | None = None, scratch_database: str, top: int = 30
) -> None:
    """One ingest of the corpus in this process under cProfile (Django started and migrated first),
    into SQLite or, with ``postgres`` (a server URL), a fresh ``scratch_database`` on that server."""
    with _migrated(source, target_bytes, postgres, scratch_database) as corpus:
        from django.core.management import call_command

        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.runcall(call_command, "ingest", str(corpus.projects))
        print(f"ingest took {time.perf_counter() - started:.2f} s under the profiler")
        stats = pstats.Stats(profile, stream=sys.stdout).strip_dirs()
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)


def claude_code_queries(
    source: Path, *, target_bytes: int, postgres: str | None = None, scratch_database: str, top: int = 40
) -> None:
    """The queries (each one a round trip on PostgreSQL) and commits of one ingest of the corpus, by
    the function of ``dashboard/`` that issued them, most first."""
    with _migrated(source, target_bytes, postgres, scratch_database) as corpus:
        from django.core.management import call_command
        from django.db import connection

        by_caller: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        commits_by_caller: Counter[str] = Counter()
        seconds_by_caller: Counter[str] = Counter()

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            caller = _caller()
            kind = sql.lstrip().split(None, 1)[0].upper()
            by_caller[caller] += 1
            by_kind[kind] += 1
            if not connection.in_atomic_block and kind in _WRITES:
                # Outside a transaction a write commits on its own: on PostgreSQL, a WAL flush.
                commits_by_caller[caller] += 1
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                seconds_by_caller[caller] += time.perf_counter() - started

        commits = 0
        commit = connection.commit

        def counted_commit() -> None:
            nonlocal commits
            commits += 1
            caller = _caller()
            commits_by_caller[caller] += 1
            started = time.perf_counter()
            commit()
            seconds_by_caller[caller] += time.perf_counter() - started

        connection.commit = counted_commit  # type: ignore[method-assign]
        started = time.perf_counter()
        with connection.execute_wrapper(count):
            call_command("ingest", str(corpus.projects))
        seconds = time.perf_counter() - started
        queries, autocommits = sum(by_kind.values()), sum(commits_by_caller.values()) - commits
        print(
            f"{connection.vendor}: {queries:,} queries, {commits:,} transactions committed and "
            f"{autocommits:,} writes committed on their own, in {seconds:.2f} s"
        )
        print("  by statement: " + ", ".join(f"{kind} {n:,}" for kind, n in by_kind.most_common()))
        waited = sum(seconds_by_caller.values())
        print(f"  queries by caller, with the seconds in the driver and server ({waited:.2f} s in all):")
        for caller, n in by_caller.most_common(top):
            print(f"  {n:6,} {seconds_by_caller[caller]:6.3f} s  {caller}")
        print("  commits (of a transaction, or of a write outside one) by caller:")
        for caller, n in commits_by_caller.most_common(top):
            print(f"  {n:6,}  {caller}")


_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "COPY"})


def _caller() -> str:
    """The innermost function of ``dashboard/`` (outside the models) on the stack: who asked."""
    frame = sys._getframe(2)
    app = str(ROOT / "dashboard")
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(app) and "/models" not in name:
            return f"{Path(name).relative_to(ROOT)}:{frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "(elsewhere)"


@contextmanager
def _migrated(
    source: Path, target_bytes: int, postgres: str | None, scratch_database: str
) -> Iterator[Corpus]:
    """The corpus, with Django started in this process on a fresh migrated database."""
    with tempfile.TemporaryDirectory(prefix="cachescope-cc-profile-") as scratch_name:
        scratch = Path(scratch_name)
        corpus = build_corpus(source, scratch / "claude", target_bytes=target_bytes)
        _describe(corpus)
        os.environ["CACHESCOPE_DATA_DIR"] = str(scratch / "data")
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("CELERY_BROKER_URL", None)
        if postgres:
            import psycopg

            with psycopg.connect(postgres, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {scratch_database} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {scratch_database}")
            os.environ["DATABASE_URL"] = postgres.rsplit("/", 1)[0] + "/" + scratch_database
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        print(f"database: {'PostgreSQL ' + scratch_database if postgres else 'SQLite'}")
        yield corpus
