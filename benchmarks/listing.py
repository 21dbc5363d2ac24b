"""Server time of every dashboard page at fleet scale, on PostgreSQL.

    python benchmarks/listing.py [--sessions 100000] [--events 10000000] [--repeat 30] [--rebuild]

Builds the fleet once in the database named by ``DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/cachescope_listing``) and keeps it: a later run whose figures
match (the database's comment records them) only migrates and measures; ``--rebuild`` loads it again,
``--drop`` drops it at the end. Loading: ``migrate``, a long dsh log through the real ingest (so one
session page has 2,000 analysed requests), then the rest of the fleet with COPY: sessions over several
sources, models and hit rates, some with warnings, their requests and events, a few sessions with
2,000 requests, projection rows, ingest jobs, fold runs and tokens (``listing_fleet.py``,
``fleet_extras.py``). It then times every page (``listing_pages.py``) in-process with Django's test
client, and prints p50 and p95 per page with the number of SQL queries. A page over its target gets
the plan of its slowest query (EXPLAIN ANALYZE) and, for a session page, a profile of where the time
goes. ``--only WORD`` times the pages whose name holds WORD. Not part of the test run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.listing_fleet import Fleet, database_ready, drop_database, mark_built, prepare  # noqa: E402
from benchmarks.listing_pages import Page, all_pages, get  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cachescope_listing"
TARGET_P95_MS = 200.0
MIN_REPEAT, BUDGET_SECONDS = 5, 15.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--heavy", type=int, default=4, help="Loaded sessions with 2,000 requests each.")
    parser.add_argument("--repeat", type=int, default=30, help="Timed requests per page.")
    parser.add_argument("--rebuild", action="store_true", help="Load the fleet again even if it was kept.")
    parser.add_argument("--drop", action="store_true", help="Drop the database at the end.")
    parser.add_argument("--only", default="", help="Time only the pages whose name holds this.")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    built = database_ready(url, args, rebuild=args.rebuild)
    os.environ["DATABASE_URL"] = url
    os.environ["CACHESCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="cachescope-listing-")
    os.environ.pop("CELERY_BROKER_URL", None)  # follow-up folds and analyses run in-process
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from benchmarks.fleet_clock import pin_wall_clock

    pin_wall_clock()
    try:
        fleet = prepare(args, built=built)
        if not built:
            mark_built(url, args)
        _report_fleet(fleet)
        _measure(args, fleet)
    finally:
        from django.db import connections

        connections.close_all()
        if args.drop:
            drop_database(url)


# --- measuring ---------------------------------------------------------------------------------------


@dataclass
class PageResult:
    name: str
    url: str
    seconds: list[float]
    queries: int
    slowest_sql: str
    slowest_ms: float
    sql_ms: float
    """The database's share of one read: its queries' summed time."""
    cpu_seconds: list[float]
    """This process's CPU time per read: on a busy machine, the part of the wall time that is ours."""

    @property
    def cpu_p50(self) -> float:
        return statistics.median(self.cpu_seconds) * 1000

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] * 1000

    @property
    def missed(self) -> bool:
        return self.p95 > TARGET_P95_MS


def _report_fleet(fleet: Fleet) -> None:
    for what, seconds in fleet.timings.items():
        print(f"{what}: {seconds:.1f} s")
    print(
        f"fleet: {fleet.sessions:,} sessions, {fleet.requests:,} requests, {fleet.events:,} events, "
        f"{fleet.warnings:,} warnings; analysed long session #{fleet.heavy_session_id} with "
        f"{fleet.heavy_requests:,} requests"
    )


def _client(role: str) -> Any:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user, _ = User.objects.get_or_create(username=f"listing-{role}")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return client


def _measure(args: argparse.Namespace, fleet: Fleet) -> None:
    clients = {"viewer": _client("viewer"), "admin": _client("admin")}
    assert fleet.heavy_session_id is not None
    pages = [page for page in all_pages(clients["viewer"], fleet.heavy_session_id) if args.only in page.name]
    print()
    heading = f"{'page':<40} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'SQL ms':>8} {'CPU ms':>8}"
    print(f"{heading}  target p95 < {TARGET_P95_MS:.0f} ms")
    results = []
    for page in pages:
        result = _time_page(clients[page.who], page, args.repeat)
        results.append(result)
        verdict = "MISSED" if result.missed else "ok"
        figures = f"{result.p50:8.1f} {result.p95:8.1f} {result.queries:8d} {result.sql_ms:8.1f}"
        figures += f" {result.cpu_p50:8.1f}"
        print(f"{result.name:<40} {figures}  {verdict}", flush=True)
    if args.json:
        kept = {r.name: [r.p50, r.p95, r.queries, r.sql_ms, r.cpu_p50] for r in results}
        args.json.write_text(json.dumps(kept, indent=1))
    for result in results:
        print(f"\n{result.name} ({result.url}): slowest query {result.slowest_ms:.1f} ms")
        if result.missed and result.slowest_sql:
            _explain(result.slowest_sql)
        if result.missed and result.name.startswith("session") and result.url.startswith("/"):
            _profile(clients["viewer"], result.url)


def _fetch(client: Any, page: Page) -> None:
    """One read of ``page``: the whole response, or an export's first chunk."""
    if page.call is not None:
        page.call()
        return
    response = get(client, page.url)
    if page.first_byte:
        next(iter(response.streaming_content))
        response.close()


def _time_page(client: Any, page: Page, repeat: int) -> PageResult:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _fetch(client, page)  # warm: compiled templates, cached model names, the buffer cache
    with CaptureQueriesContext(connection) as captured:
        _fetch(client, page)
    queries = list(captured.captured_queries)
    slowest = max(queries, key=lambda query: float(query["time"]), default={"sql": "", "time": 0})
    seconds: list[float] = []
    cpu: list[float] = []
    # A page far over its target has made its point after a few reads; the rest would take minutes.
    while len(seconds) < repeat and (len(seconds) < MIN_REPEAT or sum(seconds) < BUDGET_SECONDS):
        started, started_cpu = time.perf_counter(), time.process_time()
        _fetch(client, page)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return PageResult(
        name=page.name,
        url=page.url or "(call)",
        seconds=seconds,
        queries=len(queries),
        slowest_sql=slowest["sql"],
        slowest_ms=float(slowest["time"]) * 1000,
        sql_ms=sum(float(query["time"]) for query in queries) * 1000,
        cpu_seconds=cpu,
    )


def _explain(sql: str) -> None:
    from django.db import connection

    print(f"  {sql[:600]}{'…' if len(sql) > 600 else ''}")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        for (line,) in cursor.fetchall():
            print(f"    {line}")


def _profile(client: Any, url: str) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    get(client, url)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"dashboard|projections|template/(loader|defaultfilters)", 30)
    stats.sort_stats("tottime").print_stats(15)
    print("  where the session page's time goes (under the profiler, so slower than measured):")
    for line in out.getvalue().splitlines():
        if line.strip() and not line.lstrip().startswith(("Ordered by", "List reduced")):
            print(f"    {line}")


if __name__ == "__main__":
    main()
