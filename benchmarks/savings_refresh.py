"""What the savings refresh of one new session costs, in an empty store and beside 100,000 stored
sessions' figures: the refresh reads and writes that session's rows only, so the two should match.

    python benchmarks/savings_refresh.py [--sessions 100000] [--requests 120] [--runs 15]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope_savings python benchmarks/savings_refresh.py

With no ``DATABASE_URL`` it runs on the embedded default, SQLite in a scratch data folder (always
one of its own, whatever ``CACHESCOPE_DATA_DIR`` says); with one it uses that database, which it
creates if missing and empties first (never point it at a store you keep).

It ingests one generated anthropic-capture session (``benchmarks/whatif.py``'s generator, a clock
line in the system prompt and idle pauses, so every scenario has something to price) through
the real ingest, whose follow-ups analyse it and make its figures, then times
:func:`~dashboard.savings.refresh.session_savings_refresh` of it, forced, wall and CPU (median of
``--runs``): replaying its requests and replacing its rows. It then stores ``--sessions`` other
sessions with their ``SessionSavings`` and six ``ScenarioSaving`` groups each, as a fleet's are kept,
and times the same refresh again, then the ``/savings/`` page over the whole fleet (Django's test
client, server time): its first view after figures were made, and the views after, which read the
rankings kept. Target: under 200 ms at 100,000 sessions. Not part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# Always a scratch folder: the benchmark empties its database, which must never be a kept store.
os.environ["CACHESCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="cachescope-savings-")

SCENARIOS = ("as-recorded", "stable-prefix", "ttl-1h", "rolling-breakpoint", "best")
CAUSES = ("", "prefix-changed@system", "ttl-expired", "prefix-changed@messages")
BATCH = 5_000


def _database_ready() -> None:
    """Create the PostgreSQL database the URL names if it is missing; migrate; empty it."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        import psycopg

        *server, name = url.rsplit("/", 1)
        with psycopg.connect(f"{server[0]}/postgres", autocommit=True) as admin:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
                admin.execute(f'CREATE DATABASE "{name}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from dashboard.models import Session, Source

    Session.objects.all().delete()
    Source.objects.all().delete()


def _new_session(requests: int) -> int:
    """Ingest one generated session through the real ingest; its id."""
    import json

    from benchmarks.whatif import session_lines
    from dashboard.ingest.files import ingest_paths
    from dashboard.models import SessionSavings

    folder = Path(tempfile.mkdtemp(prefix="cachescope-savings-log-"))
    path = folder / "new-session.jsonl"
    lines = session_lines(requests, compact_every=requests + 1)  # no compaction
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = ingest_paths(paths=[path], source_name="laptop", format="anthropic-capture")
    if summary.errors:
        raise SystemExit(f"the generated log did not ingest: {summary.errors[0]}")
    (session_id,) = summary.session_ids
    if not SessionSavings.objects.filter(session_id=session_id, error="").exists():
        raise SystemExit("the ingest's follow-ups made no what-if figures for the new session")
    return session_id


def _timed(action: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``action`` over ``runs``, the collector paused as a worker's
    task would not be interrupted by it either."""
    walls, cpus = [], []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        gc.enable()
    return statistics.median(walls), statistics.median(cpus)


def _refresh(session_id: int) -> Callable[[], object]:
    from dashboard.savings.refresh import session_savings_refresh

    def run() -> object:
        assert session_savings_refresh(session_id=session_id, force=True)
        return None

    return run


def _load_fleet(count: int, template: int, rng: random.Random) -> None:
    """Store ``count`` sessions with figures shaped as the new session's are, a batch at a time."""
    from django.db import transaction
    from django.utils import timezone

    from dashboard.models import ScenarioSaving, Session, SessionSavings, Source

    results = SessionSavings.objects.get(session_id=template).results
    sources = [Source.objects.get_or_create(name=f"fleet-{n}")[0] for n in range(5)]
    now = timezone.now()
    for start in range(0, count, BATCH):
        size = min(BATCH, count - start)
        with transaction.atomic():
            sessions = Session.objects.bulk_create(
                Session(
                    source=sources[n % len(sources)],
                    external_id=f"fleet-{start + n:06}",
                    format="anthropic-capture",
                    request_count=120,
                    started_at=now,
                    last_activity=now,
                )
                for n in range(size)
            )
            if sessions[0].pk is None:  # a backend that does not return the new keys
                stored = Session.objects.filter(external_id__startswith="fleet-")
                ids = dict(stored.values_list("external_id", "pk"))
                for session in sessions:
                    session.pk = ids[session.external_id]
            savings, groups = [], []
            for session in sessions:
                recorded = Decimal(rng.randint(1_000, 5_000_000)) / Decimal(1_000_000)
                best = recorded * Decimal(rng.randint(0, 60)) / 100
                savings.append(
                    SessionSavings(
                        session=session,
                        inputs_key="fleet",
                        computed_at=now,
                        recorded_cost=recorded,
                        reported_cost=recorded,
                        best_scenario="stable-prefix+ttl-1h",
                        best_saving=best,
                        results=results,
                    )
                )
                for scenario in SCENARIOS[1:]:
                    for cause in rng.sample(CAUSES, 2):
                        part = recorded / 2
                        saved = part * Decimal(rng.randint(0, 60)) / 100
                        groups.append(
                            ScenarioSaving(
                                session=session,
                                scenario=scenario,
                                model="claude-sonnet-4-5-20250929",
                                client_version=f"2.1.{rng.randint(30, 40)}",
                                cause=cause,
                                requests=60,
                                touched=rng.randint(0, 60),
                                recorded_cost=part,
                                cost=part - saved,
                                saving=saved,
                            )
                        )
            SessionSavings.objects.bulk_create(savings)
            ScenarioSaving.objects.bulk_create(groups, batch_size=BATCH)
        print(f"  stored {start + size:,} of {count:,} sessions", end="\r", flush=True)
    print()


def _savings_page(runs: int, *, cold: bool) -> tuple[float, float]:
    """The page over the whole fleet: ``cold``, each read after the cache is emptied (the first
    view after a session's figures were made); otherwise from the rankings kept since the last."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user, _ = User.objects.get_or_create(username="savings-benchmark")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)

    from django.core.cache import cache

    def read() -> object:
        if cold:
            cache.clear()
        response = client.get("/savings/?range=all")
        assert response.status_code == 200, response.status_code
        return None

    read()  # the first read warms the price table and the templates
    return _timed(read, runs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100_000, help="Other sessions stored beside it.")
    parser.add_argument("--requests", type=int, default=120, help="Requests of the new session.")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    _database_ready()
    from django.db import connection

    from dashboard.models import ScenarioSaving

    print(f"database: {connection.vendor} ({connection.settings_dict['NAME']})")
    session_id = _new_session(args.requests)
    rows = ScenarioSaving.objects.filter(session_id=session_id).count()
    print(f"new session: {args.requests} requests, {rows} scenario groups")

    empty = _timed(_refresh(session_id), args.runs)
    started = time.perf_counter()
    _load_fleet(args.sessions, session_id, random.Random(args.seed))
    print(f"fleet of {args.sessions:,} sessions stored in {time.perf_counter() - started:.0f} s")
    full = _timed(_refresh(session_id), args.runs)
    cold = _savings_page(max(3, args.runs // 3), cold=True)
    warm = _savings_page(args.runs, cold=False)

    print(f"{'savings refresh of the new session':<48}{'wall ms':>10}{'CPU ms':>10}")
    print(f"{'  alone in the store':<48}{empty[0] * 1000:>10.1f}{empty[1] * 1000:>10.1f}")
    beside = f"  beside {args.sessions:,} sessions (target < 200)"
    print(f"{beside:<48}{full[0] * 1000:>10.1f}{full[1] * 1000:>10.1f}")
    print(f"{'  ratio, beside / alone':<48}{full[0] / empty[0]:>10.2f}{full[1] / empty[1]:>10.2f}")
    pages = f"/savings/ over {args.sessions + 1:,} sessions"
    print(f"{pages + ', figures just made':<48}{cold[0] * 1000:>10.1f}{cold[1] * 1000:>10.1f}")
    print(f"{pages + ', the views after':<48}{warm[0] * 1000:>10.1f}{warm[1] * 1000:>10.1f}")


if __name__ == "__main__":
    main()
