"""Ingest throughput on SQLite and PostgreSQL, and what ``manage.py ingest`` costs over a plain parse.

    python benchmarks/ingest.py [--mb 200] [--postgres postgres://postgres@127.0.0.1:5432/postgres]
    python benchmarks/ingest.py --only claude-code [--claude-code-mb 16] [--runs 3] [--against TREE]
    python benchmarks/ingest.py --only claude-code --profile [--database postgresql]
    python benchmarks/ingest.py --only claude-code --queries [--database postgresql]

``dsh``: generates a dsh corpus of about ``--mb`` megabytes (a third of the logs multi-frame zstd),
ingests it into a fresh database of each kind in a child process, and prints events/s and MB/s.
Follow-up folds and analyses are switched off there, so those figures are of ingest alone.

``claude-code``: copies the real Claude Code transcripts under ../shared/data to about
``--claude-code-mb`` megabytes (``claude_code_corpus.py``) and times, in fresh processes and
interleaved run by run, what a user waits for: ``manage.py ingest <folder>`` into a fresh SQLite
database and a fresh PostgreSQL one (migrated beforehand, untimed), with everything stored and the
folds and analyses done (the embedded default runs them in-process, before the command returns),
beside a bare parser measured the same way: ``python -c`` that decodes every line of the same files
with orjson (and with ``json``), interpreter start included, and ccusage when ``npx --no-install
ccusage`` answers; with ``--against``, the ingests of another checkout too (an earlier commit's
``git archive``), in turn with these, into databases of their own. ``--profile`` instead runs one
ingest of that corpus under cProfile and prints the top functions, and ``--queries`` counts the
queries and commits of one ingest by the function that issued them; both on SQLite or, with
``--database postgresql``, on a fresh database of the ``--postgres`` server. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=200, help="Corpus size in megabytes (on disk).")
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432/postgres",
        help="A PostgreSQL server URL; a scratch database is created on it.",
    )
    parser.add_argument(
        "--only", choices=("dsh", "claude-code"), help="Run one of the two benchmarks (default: both)."
    )
    parser.add_argument(
        "--claude-code-mb", type=float, default=16, help="Size of the Claude Code corpus in megabytes."
    )
    parser.add_argument("--runs", type=int, default=3, help="Claude Code timings: runs of each command.")
    parser.add_argument(
        "--profile", action="store_true", help="Profile one Claude Code ingest instead of timing it."
    )
    parser.add_argument(
        "--queries", action="store_true", help="Count the queries of one Claude Code ingest by caller."
    )
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="The database of --profile and --queries (PostgreSQL: a scratch database on --postgres).",
    )
    parser.add_argument(
        "--scratch-database",
        default=None,
        help="The PostgreSQL database the Claude Code runs drop and create (default cachescope_ingestperf).",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="Claude Code timings: a checkout of an earlier commit (git archive) whose ingest runs in turn.",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(Path(args.child))))
        return
    if args.only != "claude-code":
        _dsh_throughput(args)
    if args.only != "dsh":
        if not SHARED.is_dir():
            print(f"(no Claude Code comparison: {SHARED} is absent)")
            return
        print()
        from benchmarks.ingest_comparison import (
            SCRATCH_DATABASE,
            claude_code_comparison,
            claude_code_profile,
            claude_code_queries,
        )

        target = int(args.claude_code_mb * 1_000_000)
        scratch_database = args.scratch_database or SCRATCH_DATABASE
        postgres = args.postgres if args.database == "postgresql" else None
        if args.profile or args.queries:
            measure = claude_code_profile if args.profile else claude_code_queries
            measure(
                SHARED / "claude-code",
                target_bytes=target,
                postgres=postgres,
                scratch_database=scratch_database,
            )
        else:
            claude_code_comparison(
                SHARED / "claude-code",
                target_bytes=target,
                runs=args.runs,
                postgres=args.postgres,
                scratch_database=scratch_database,
                against=args.against,
            )


def _dsh_throughput(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="cachescope-bench-") as scratch:
        corpus = Path(scratch) / "corpus"
        from dashboard.demo import write_corpus

        started = time.perf_counter()
        stats = write_corpus(corpus, target_bytes=args.mb * 1024 * 1024)
        print(
            f"corpus: {stats.files} files ({stats.zstd_files} zstd), {stats.sessions} sessions, "
            f"{stats.events:,} events, {stats.bytes / 1e6:.1f} MB on disk, generated in "
            f"{time.perf_counter() - started:.1f} s"
        )
        uncompressed = _uncompressed_bytes(corpus)
        print(f"corpus uncompressed: {uncompressed / 1e6:.1f} MB of JSON lines")
        print()
        print(f"{'database':<12} {'seconds':>9} {'events/s':>12} {'MB/s (disk)':>12} {'MB/s (json)':>12}")
        for name, env in _databases(args.postgres, Path(scratch)):
            result = _run_child(corpus, env)
            seconds = result["seconds"]
            print(
                f"{name:<12} {seconds:9.1f} {result['events'] / seconds:12,.0f} "
                f"{stats.bytes / 1e6 / seconds:12.1f} {uncompressed / 1e6 / seconds:12.1f}"
            )
            if result["errors"]:
                print(f"  {result['errors']} errors: {result['first_errors']}")


def _databases(postgres: str, scratch: Path) -> list[tuple[str, dict[str, str]]]:
    sqlite = {"CACHESCOPE_DATA_DIR": str(scratch / "sqlite"), "DATABASE_URL": ""}
    databases = [("sqlite", sqlite)]
    url = _scratch_postgres(postgres)
    if url:
        databases.append(("postgresql", {"CACHESCOPE_DATA_DIR": str(scratch / "pg"), "DATABASE_URL": url}))
    return databases


def _scratch_postgres(server_url: str) -> str:
    """A fresh ``cachescope_bench`` database on the server, or '' when none answers."""
    try:
        import psycopg

        with psycopg.connect(server_url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("DROP DATABASE IF EXISTS cachescope_bench")
            conn.execute("CREATE DATABASE cachescope_bench")
    except Exception as error:
        print(f"(no PostgreSQL run: {error})")
        return ""
    return server_url.rsplit("/", 1)[0] + "/cachescope_bench"


def _run_child(corpus: Path, env: dict[str, str]) -> dict[str, Any]:
    child_env = {**os.environ, **env}
    if not child_env["DATABASE_URL"]:
        del child_env["DATABASE_URL"]
    child_env.pop("CELERY_BROKER_URL", None)
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(corpus)],
        env=child_env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from dashboard.ingest import followups

    # Ingest alone: folds and analyses are measured by their own benchmarks.
    followups._FOLLOWUP_MODULES.clear()
    followups._FOLLOWUPS.clear()


def _child(corpus: Path) -> dict[str, Any]:
    _setup_django()
    from dashboard.ingest.files import ingest_paths

    started = time.perf_counter()
    summary = ingest_paths(paths=[corpus], source_name="bench")
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "events": summary.events_added,
        "sessions": summary.sessions,
        "errors": len(summary.errors),
        "first_errors": [str(e) for e in summary.errors[:3]],
    }


def _uncompressed_bytes(corpus: Path) -> int:
    import zstandard

    total = 0
    for path in corpus.rglob("*"):
        if path.name.endswith(".zstd"):
            with (
                path.open("rb") as raw,
                zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as r,
            ):
                while chunk := r.read(1 << 20):
                    total += len(chunk)
        elif path.is_file():
            total += path.stat().st_size
    return total


if __name__ == "__main__":
    main()
