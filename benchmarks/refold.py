"""Re-folding ``contextBreakdown`` from its positional to its compact state version (7 to 8, which keep
the surface rules of 5 and 6) over a reference-shaped corpus (DESIGN §5.1).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope python benchmarks/refold.py [BROKER_URL]

Prints, in one run: identical and diverged sessions; retained state under each version; fold
throughput per version; the time to list every session with its breakdown row loaded from the
database and validated (deserialized and viewed), v7 rows against v8 rows; and the wall time of a
re-fold job on 1, 2 and 4 Celery workers (``--workers``) with the speed-up over one worker and where
each job's time goes: folding and comparing (the workers' summed fold time), the rest of the
workers' time (reading the log, writing rows and results, task overhead), and waiting in the queue
before the first result and after the last. ``--profile`` runs one more job on one worker under
cProfile and prints its costliest calls. ``DATABASE_URL`` names a PostgreSQL server: the figures
are taken in a scratch database ``<name>_refold_bench`` created on it and dropped at the end. The
broker (default ``redis://127.0.0.1:6379/14``) is purged of the refold queue first. Not part of the
test run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_BROKER = "redis://127.0.0.1:6379/14"
LISTING_REPEATS = 5
POSITIONAL, COMPACT = 7, 8
"""The pair compared: one entry per message against the surviving system prompts, each with the envelope."""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("broker", nargs="?", default=DEFAULT_BROKER, help="Celery broker URL.")
    parser.add_argument("--sessions", type=int, default=836, help="Sessions in the corpus (reference: 836).")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2, 4], help="Worker counts to time the job on."
    )
    parser.add_argument(
        "--jobs-only", action="store_true", help="Skip the engine and listing figures; time the jobs only."
    )
    parser.add_argument("--profile", action="store_true", help="Profile one more job on one worker.")
    args = parser.parse_args()
    server = os.environ.get("DATABASE_URL", "")
    if not server.startswith(("postgres://", "postgresql://")):
        sys.exit("DATABASE_URL must name a PostgreSQL server (the worker figures need one)")
    database_url = _scratch_database(server)
    os.environ["DATABASE_URL"] = database_url
    os.environ["CELERY_BROKER_URL"] = args.broker
    os.environ.setdefault("CACHESCOPE_DATA_DIR", tempfile.mkdtemp(prefix="cachescope-refold-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    try:
        _run(args, database_url)
    finally:
        _drop_database(server, database_url)


def _run(args: argparse.Namespace, database_url: str) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard.demo import refold_corpus

    call_command("migrate", verbosity=0)
    if args.jobs_only:
        # Built as it is stored: a fleet's corpus need not fit in memory at once.
        session_ids = _store(refold_corpus(sessions=args.sessions), (POSITIONAL,))
    else:
        started = time.perf_counter()
        corpus = list(refold_corpus(sessions=args.sessions))
        events = sum(len(log) for _, log in corpus)
        print(
            f"corpus: {len(corpus)} sessions, {events:,} events, "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        _engine_figures(corpus)
        session_ids = _store(corpus, (POSITIONAL, COMPACT))
        del corpus
        _listing_figures(session_ids)
    _worker_figures(session_ids, args.broker, database_url, args.workers, args.profile)


# --- the engine alone --------------------------------------------------------------------------------


def _engine_figures(corpus: list[tuple[str, list[Any]]]) -> None:
    from projections.folds.fold import fold, fold_views, state_size_bytes
    from projections.folds.registry import get_projection

    positional, compact = (
        get_projection("contextBreakdown", POSITIONAL),
        get_projection("contextBreakdown", COMPACT),
    )
    identical = diverged = 0
    sizes: dict[int, list[int]] = {POSITIONAL: [], COMPACT: []}
    for _, log in corpus:
        same = True
        old_state = new_state = None
        for old, new in zip(fold_views(positional, log), fold_views(compact, log), strict=True):
            same = same and old.view == new.view
            old_state, new_state = old.state, new.state
        identical += same
        diverged += not same
        sizes[POSITIONAL].append(
            state_size_bytes(positional, old_state if old_state is not None else positional.init())
        )
        sizes[COMPACT].append(
            state_size_bytes(compact, new_state if new_state is not None else compact.init())
        )
    print(f"compared after every event: {identical} identical, {diverged} diverged")
    for version in (POSITIONAL, COMPACT):
        values = sizes[version]
        print(
            f"retained state v{version}: {_size(sum(values))} total, "
            f"median {statistics.median(values):,.0f} B, max {max(values):,} B per session"
        )
    print("  (reference for these surface rules: 7.13 MB under v5, 110 KB under v6)")
    events = sum(len(log) for _, log in corpus)
    for projection in (positional, compact):
        started = time.perf_counter()
        for _, log in corpus:
            fold(projection, log)
        seconds = time.perf_counter() - started
        print(
            f"fold throughput v{projection.state_version}: {events / seconds:,.0f} events/s ({seconds:.2f} s)"
        )


# --- the database ------------------------------------------------------------------------------------


def _store(corpus: Iterable[tuple[str, list[Any]]], versions: tuple[int, ...]) -> dict[str, int]:
    """Store the corpus session by session (events by COPY, as many as a fleet holds) with a
    ``contextBreakdown`` row per version in ``versions``; the corpus is read once, as it is built."""
    from django.db import connection, transaction

    from dashboard.models import ProjectionRow, Session, Source
    from projections.folds.fold import fold, state_size_bytes, to_row
    from projections.folds.registry import get_projection

    started = time.perf_counter()
    source = Source.objects.create(name="refold-bench")
    ids: dict[str, int] = {}
    events = 0
    rows: list[ProjectionRow] = []
    columns = "session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable"
    for batch in _batched(corpus, 200):
        with transaction.atomic():
            sessions = Session.objects.bulk_create(
                Session(source=source, external_id=external_id, format="dsh") for external_id, _ in batch
            )
            with (
                connection.cursor() as cursor,
                cursor.cursor.copy(f"COPY dashboard_event ({columns}) FROM STDIN") as copy,
            ):
                for session, (_, log) in zip(sessions, batch, strict=True):
                    for event in log:
                        copy.write_row(
                            (
                                session.pk,
                                event.seq,
                                event.type,
                                event.time,
                                json.dumps(event.data),
                                None if event.surface_op is None else json.dumps(event.surface_op),
                                None
                                if event.source_event_seqs is None
                                else json.dumps(list(event.source_event_seqs)),
                                event.ignorable,
                            )
                        )
        for session, (external_id, log) in zip(sessions, batch, strict=True):
            ids[external_id] = session.pk
            events += len(log)
            for projection in (get_projection("contextBreakdown", v) for v in versions):
                state = fold(projection, log)
                row = to_row(projection, state, log[-1].seq)
                rows.append(
                    ProjectionRow(
                        session=session,
                        key=row.key,
                        ver=row.ver,
                        seq=row.seq,
                        val=row.val,
                        view=projection.view_json(projection.view(state)),
                        state_bytes=state_size_bytes(projection, state),
                    )
                )
        ProjectionRow.objects.bulk_create(rows, batch_size=500)
        rows.clear()
    print(
        f"built and stored {len(ids)} sessions ({events:,} events) with "
        f"{' and '.join(f'v{v}' for v in versions)} rows in {time.perf_counter() - started:.1f} s"
    )
    _settle()
    return ids


def _settle() -> None:
    """Vacuum and analyse what the COPY just loaded, untimed, as a database that has run a while is.

    Otherwise the first job timed pays for the load: its reads set the hint bits of millions of
    fresh rows (writing every page again) while autovacuum works through the same tables, so
    whichever worker count runs first looked slowest (2 workers took 135 s run first, 97 s run
    after 1 worker, on the same 10,000 sessions).
    """
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        for table in ("dashboard_event", "dashboard_session", "dashboard_projectionrow"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    print(f"vacuumed and analysed the loaded tables in {time.perf_counter() - started:.1f} s (untimed)")


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _listing_figures(session_ids: dict[str, int]) -> None:
    """List every session with its breakdown: load the row, rebuild the state from it, take the view."""
    from django.db import connection

    from dashboard.models import ProjectionRow
    from projections.folds.registry import get_projection

    timings: dict[int, float] = {}
    connection.ensure_connection()
    for version in (POSITIONAL, COMPACT):
        projection = get_projection("contextBreakdown", version)
        best = float("inf")
        for _ in range(LISTING_REPEATS):
            started = time.perf_counter()
            rows = ProjectionRow.objects.filter(key="contextBreakdown", ver=version).order_by("-session_id")
            listing = []
            for external_id, title, val in rows.values_list("session__external_id", "session__title", "val"):
                view = projection.view(projection.deserialize(val))
                listing.append((external_id, title, view.system_tokens, view.message_tokens))
            best = min(best, time.perf_counter() - started)
        assert len(listing) == len(session_ids)
        timings[version] = best
        print(f"listing {len(listing)} sessions with validated v{version} rows: {best * 1000:.1f} ms")
    print(
        f"  v{COMPACT} listing is {timings[POSITIONAL] / timings[COMPACT]:.1f}x faster "
        "(target >= 15x; reference for these surface rules: 75 ms -> 4.5 ms)"
    )


# --- re-fold jobs on Celery workers ------------------------------------------------------------------


def _worker_figures(
    session_ids: dict[str, int], broker: str, database_url: str, counts: list[int], profile: bool
) -> None:
    from kombu import Connection

    from dashboard.models import ProjectionRow

    with Connection(broker, connect_timeout=3) as conn:
        conn.ensure_connection(max_retries=1)
        # A queue that does not exist yet holds nothing to purge.
        with contextlib.suppress(Exception):
            conn.default_channel.queue_purge("refold")
    positional_rows = list(ProjectionRow.objects.filter(key="contextBreakdown", ver=POSITIONAL))
    walls: dict[int, float] = {}
    for workers in counts:
        walls[workers] = _job(positional_rows, session_ids, workers, broker, database_url)
    base = walls.get(1)
    if base is not None:
        for workers, wall in walls.items():
            if workers > 1:
                print(f"  speed-up on {workers} workers: {base / wall:.2f}x (goal from 1 to 2: 1.8x)")
    if profile:
        stats = Path(tempfile.mkstemp(prefix="refold-worker-", suffix=".prof")[1])
        _job(positional_rows, session_ids, 1, broker, database_url, profile_to=stats)
        _print_profile(stats)
        stats.unlink(missing_ok=True)


def _job(
    positional_rows: list[Any],
    session_ids: dict[str, int],
    workers: int,
    broker: str,
    database_url: str,
    profile_to: Path | None = None,
) -> float:
    """Run one re-fold job from the state before a version bump; print its wall time and phases."""
    from django.db.models import Sum

    from dashboard.celery import app
    from dashboard.models import FoldRun, FoldRunResult, ProjectionRow, Warning
    from dashboard.refold.report import fold_run_report
    from dashboard.refold.runs import fold_run_create

    # Back to the state before a version bump: positional rows only.
    ProjectionRow.objects.filter(key="contextBreakdown").delete()
    ProjectionRow.objects.bulk_create(_copies(positional_rows), batch_size=500)
    Warning.objects.all().delete()
    run = fold_run_create(key="contextBreakdown", from_version=POSITIONAL, to_version=COMPACT)
    with _workers(workers, broker, database_url, profile_to=profile_to):
        sent = time.time()
        started = time.perf_counter()
        with app.connection_for_write(broker) as conn:
            app.send_task("dashboard.tasks.refold_run", args=[run.pk], connection=conn, queue="refold")
        while not FoldRun.objects.get(pk=run.pk).is_finished:
            time.sleep(0.1)
        wall = time.perf_counter() - started
    run.refresh_from_db()
    report = fold_run_report(run=run)
    label = "1 worker under cProfile" if profile_to else f"{workers} worker{'s' if workers > 1 else ''}"
    print(
        f"re-fold job on {label}: {wall:.1f} s wall "
        f"({run.status}; {report.sessions} sessions, {report.events:,} events, "
        f"{report.identical} identical, {report.diverged} diverged, {report.errored} errored; "
        f"state {_size(report.from_bytes.total)} -> {_size(report.to_bytes.total)})"
    )
    results = FoldRunResult.objects.filter(run=run)
    assert results.count() == len(session_ids)
    fold = results.aggregate(fold=Sum("seconds"))["fold"] or 0.0
    claimed = run.started_at.timestamp() - sent if run.started_at else 0.0
    print(
        f"  where the time goes: {claimed:.1f} s until a worker claimed the job; of the "
        f"{wall * workers:.1f} worker-seconds, {fold:.1f} s reading logs, folding and comparing, "
        f"{max(0.0, wall * workers - fold):.1f} s on the rest (writing rows and results, locks, "
        "queueing and task overhead)"
    )
    return wall


def _print_profile(path: Path) -> None:
    import pstats

    print("  costliest calls in one worker (cumulative seconds):")
    stats = pstats.Stats(str(path))
    entries = []
    for (filename, line, name), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if any(part in filename for part in ("/dashboard/", "/projections/")):
            entries.append((cumulative, calls, f"{Path(filename).name}:{line} {name}"))
    for cumulative, calls, where in sorted(entries, reverse=True)[:25]:
        print(f"    {cumulative:8.2f} s  {calls:>9,} calls  {where}")


def _copies(rows: list[Any]) -> list[Any]:
    from dashboard.models import ProjectionRow

    return [
        ProjectionRow(
            session_id=row.session_id,
            key=row.key,
            ver=row.ver,
            seq=row.seq,
            val=row.val,
            view=row.view,
            state_bytes=row.state_bytes,
        )
        for row in rows
    ]


class _workers:
    """N ``celery worker`` processes on the refold queue, started and ready, stopped on exit."""

    def __init__(self, count: int, broker: str, database_url: str, profile_to: Path | None = None) -> None:
        self.count, self.broker, self.database_url = count, broker, database_url
        self.profile_to = profile_to
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs = [Path(tempfile.mkstemp(prefix="refold-worker-", suffix=".log")[1]) for _ in range(count)]

    def __enter__(self) -> _workers:
        env = {**os.environ, "DATABASE_URL": self.database_url, "CELERY_BROKER_URL": self.broker}
        for log in self.logs:
            profiler = ["-m", "cProfile", "-o", str(self.profile_to)] if self.profile_to else []
            command = [
                sys.executable, *profiler, "-m", "celery", "-A", "dashboard", "worker", "--pool", "solo",
                "-Q", "refold",
                "-n", f"bench-{uuid.uuid4().hex[:8]}@%h", "--loglevel", "WARNING", "--without-gossip",
                "--without-mingle", "--without-heartbeat",
            ]  # fmt: skip
            with log.open("wb") as out:
                self.processes.append(
                    subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
                )
        # Ready when the worker has connected: its log shows the banner's "ready" line at INFO only,
        # so wait for the broker to list a consumer per worker on the queue instead.
        deadline = time.monotonic() + 60
        while self._consumers() < self.count:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                raise RuntimeError("a worker did not start: " + " ".join(str(log) for log in self.logs))
            time.sleep(0.2)
        return self

    def _consumers(self) -> int:
        from dashboard.celery import app

        replies = app.control.inspect(timeout=0.5, connection=None).active_queues() or {}
        return sum(1 for queues in replies.values() if any(q["name"] == "refold" for q in queues))

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in self.logs:
            log.unlink(missing_ok=True)


# --- scratch database --------------------------------------------------------------------------------


def _scratch_database(server: str) -> str:
    import psycopg

    base, _, name = server.rpartition("/")
    scratch = f"{name or 'cachescope'}_refold_bench"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
        conn.execute(f'CREATE DATABASE "{scratch}"')
    return f"{base}/{scratch}"


def _drop_database(server: str, database_url: str) -> None:
    import psycopg

    base, _, _ = server.rpartition("/")
    scratch = database_url.rpartition("/")[2]
    # Django may not be set up when the run failed early.
    with contextlib.suppress(Exception):
        from django.db import connections

        connections.close_all()
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


def _size(count: int) -> str:
    for limit, unit in ((1_000_000, "MB"), (1_000, "KB")):
        if count >= limit:
            return f"{count / limit:.2f} {unit}"
    return f"{count} B"


if __name__ == "__main__":
    main()
