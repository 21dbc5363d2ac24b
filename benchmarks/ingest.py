"""Ingest throughput on SQLite and PostgreSQL, and the cost of ingest over a plain parse.

    python benchmarks/ingest.py [--mb 200] [--postgres postgres://postgres@127.0.0.1:5432/postgres]

Generates a dsh corpus of about ``--mb`` megabytes (a third of the logs multi-frame zstd), ingests it
into a fresh database of each kind in a child process, and prints events/s and MB/s. Then, in one
process, it times the ingest of the Claude Code transcripts under ../shared/data next to a plain
``json.loads`` of every line of the same files. Follow-up folds and analyses are switched off so the
figures are those of ingest alone. Not part of the test run.
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
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(Path(args.child))))
        return

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
        if SHARED.is_dir():
            print()
            _shared_transcripts(Path(scratch))


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
    from dashboard.services import followups

    followups._FOLLOWUPS.clear()  # ingest alone: folds and analyses are measured by their own benchmarks


def _child(corpus: Path) -> dict[str, Any]:
    _setup_django()
    from dashboard.services.ingest import ingest_paths

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


def _shared_transcripts(scratch: Path) -> None:
    """Ingest of the real transcripts beside a plain parse of the same bytes, best of 5 each."""
    os.environ["CACHESCOPE_DATA_DIR"] = str(scratch / "shared")
    os.environ.pop("DATABASE_URL", None)
    _setup_django()
    from dashboard.models import Session
    from dashboard.services.ingest import ingest_paths

    files = sorted((SHARED / "claude-code").rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)

    def parse() -> None:
        for path in files:
            with path.open("rb") as handle:
                for line in handle:
                    json.loads(line)

    def ingest() -> None:
        Session.objects.all().delete()
        ingest_paths(paths=[SHARED / "claude-code"], source_name="shared")

    parse_s = min(_timed(parse) for _ in range(5))
    ingest_s = min(_timed(ingest) for _ in range(5))
    print(f"shared Claude Code transcripts: {len(files)} files, {size / 1e6:.2f} MB")
    print(f"  plain json.loads of every line: {parse_s * 1000:8.1f} ms")
    print(
        f"  ingest into SQLite:             {ingest_s * 1000:8.1f} ms  ({ingest_s / parse_s:.1f}x the parse)"
    )


def _timed(work: Any) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
