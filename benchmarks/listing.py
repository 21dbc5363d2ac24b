"""Server time of the sessions list and of a 2,000-request session page at fleet scale, on PostgreSQL.

    python benchmarks/listing.py [--sessions 100000] [--events 10000000] [--repeat 30] [--keep]

Creates the scratch database named by ``DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/cachescope_listing``), runs ``migrate``, ingests a few long dsh
logs through the real pipeline (so one session page has 2,000 analysed requests), then loads the
rest of the fleet with COPY: sessions over several sources, models and hit rates, some with
warnings, their requests and their events, a few sessions with 2,000 requests. It then times pages
in-process with Django's test client, signed in as a viewer, and prints p50 and p95 per page with
the number of SQL queries. A page over its target gets the plan of its slowest query (EXPLAIN
ANALYZE) and, for the session page, a profile of where the time goes. The database is dropped at the
end unless ``--keep``; ``--reuse`` measures a database kept earlier without loading it again.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import cProfile
import html
import io
import math
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.listing_fleet import Fleet, drop_database, prepare, recreate_database  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cachescope_listing"
LIST_P50_MS, LIST_P95_MS, SESSION_P50_MS = 50.0, 150.0, 200.0
DEEP_PAGES = 50


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--heavy", type=int, default=4, help="Loaded sessions with 2,000 requests each.")
    parser.add_argument("--repeat", type=int, default=30, help="Timed requests per list page.")
    parser.add_argument("--session-repeat", type=int, default=10, help="Timed requests of the session page.")
    parser.add_argument("--keep", action="store_true", help="Keep the scratch database.")
    parser.add_argument("--reuse", action="store_true", help="Measure a kept database without loading.")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    if not args.reuse:
        recreate_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ["CACHESCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="cachescope-listing-")
    os.environ.pop("CELERY_BROKER_URL", None)  # follow-up folds and analyses run in-process
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    try:
        fleet = prepare(args)
        _report_fleet(fleet)
        _measure(args, fleet)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
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
    target_p50: float
    target_p95: float | None

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] * 1000

    @property
    def missed(self) -> bool:
        return self.p50 > self.target_p50 or (self.target_p95 is not None and self.p95 > self.target_p95)


def _report_fleet(fleet: Fleet) -> None:
    for what, seconds in fleet.timings.items():
        print(f"{what}: {seconds:.1f} s")
    print(
        f"fleet: {fleet.sessions:,} sessions, {fleet.requests:,} requests, {fleet.events:,} events, "
        f"{fleet.warnings:,} warnings; analysed long session #{fleet.heavy_session_id} with "
        f"{fleet.heavy_requests:,} requests"
    )


def _measure(args: argparse.Namespace, fleet: Fleet) -> None:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user, _ = User.objects.get_or_create(username="listing-viewer")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)

    deep_url, walk = _deep_url(client)
    filtered = "/sessions/?source=research-cluster&model=opus&warnings=on"
    by_hit_rate = _second_page(client, "/sessions/?sort=hit_rate")
    heavy = f"/sessions/{fleet.heavy_session_id}/"
    pages = [
        ("list: first page", "/sessions/", LIST_P50_MS, LIST_P95_MS),
        ("list: filtered", filtered, LIST_P50_MS, LIST_P95_MS),
        (f"list: page {DEEP_PAGES + 1} by cursor", deep_url, LIST_P50_MS, LIST_P95_MS),
        ("list: sort=-read", "/sessions/?sort=-read", LIST_P50_MS, LIST_P95_MS),
        ("list: sort=hit_rate, page 2", by_hit_rate, LIST_P50_MS, LIST_P95_MS),
        (f"session: {fleet.heavy_requests:,} requests", heavy, SESSION_P50_MS, None),
    ]
    results = []
    for name, url, p50, p95 in pages:
        repeat = args.session_repeat if name.startswith("session") else args.repeat
        results.append(_time_page(client, name, url, repeat, p50, p95))
    print()
    print(f"walking {DEEP_PAGES} pages by cursor: p50 {statistics.median(walk) * 1000:.1f} ms per page")
    print()
    print(f"{'page':<34} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}  target")
    for result in results:
        target = f"p50 < {result.target_p50:.0f}" + (
            f", p95 < {result.target_p95:.0f}" if result.target_p95 is not None else ""
        )
        verdict = "MISSED" if result.missed else "ok"
        figures = f"{result.p50:8.1f} {result.p95:8.1f} {result.queries:8d}"
        print(f"{result.name:<34} {figures}  {target} ms: {verdict}")
    for result in results:
        print(f"\n{result.name}: slowest query {result.slowest_ms:.1f} ms")
        if result.missed:
            _explain(result.slowest_sql)
            if result.name.startswith("session"):
                _profile(client, result.url)


def _get(client: Any, url: str) -> Any:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}")
    return response


def _next_url(response: Any) -> str:
    found = re.search(r'<a href="([^"]+)"[^>]*rel="next"', response.content.decode())
    if not found:
        raise SystemExit("the sessions list has no next page")
    return "/sessions/" + html.unescape(found.group(1))


def _second_page(client: Any, url: str) -> str:
    return _next_url(_get(client, url))


def _deep_url(client: Any) -> tuple[str, list[float]]:
    """Follow the next-page links from the first page, as a reader paging on would."""
    url, walk = "/sessions/", []
    for _ in range(DEEP_PAGES):
        started = time.perf_counter()
        response = _get(client, url)
        walk.append(time.perf_counter() - started)
        url = _next_url(response)
    return url, walk


def _time_page(client: Any, name: str, url: str, repeat: int, p50: float, p95: float | None) -> PageResult:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _get(client, url)  # warm: compiled templates, cached model names, the buffer cache
    with CaptureQueriesContext(connection) as captured:
        _get(client, url)
    queries = list(captured.captured_queries)
    slowest = max(queries, key=lambda query: float(query["time"]))
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        _get(client, url)
        seconds.append(time.perf_counter() - started)
    return PageResult(
        name=name,
        url=url,
        seconds=seconds,
        queries=len(queries),
        slowest_sql=slowest["sql"],
        slowest_ms=float(slowest["time"]) * 1000,
        target_p50=p50,
        target_p95=p95,
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
    _get(client, url)
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
