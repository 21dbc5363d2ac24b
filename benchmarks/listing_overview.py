"""Server time of the overview over each of its ranges at fleet scale, on PostgreSQL.

    python benchmarks/listing_overview.py [--sessions 100000] [--events 10000000] [--repeat 30]
    python benchmarks/listing_overview.py --raw     # the same ranges summed from the requests table

Builds (or reuses, as ``benchmarks/listing.py`` does) the fleet of ``benchmarks/listing_fleet.py``
in the database named by ``DATABASE_URL`` (default ``cachescope_overview``), rebuilds the usage
rollups its bulk load bypassed (``manage.py rollups_backfill``, timed) unless they already count
every timed request, then times ``/?range=…`` for 24h, 7d, 30d, 90d and all, and the wasted-writes
panel the overview loads on its own (repeated, and with every cached cost dropped, as after a
price change or a restart), printing p50, p95, the query count and the database's share of each. ``--raw``
times the window's usage summed from the requests table instead of the rollups, the query the
rollups replace. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.listing import TARGET_P95_MS, _client, _time_page  # noqa: E402
from benchmarks.listing_fleet import database_ready, mark_built, prepare  # noqa: E402
from benchmarks.listing_pages import Page  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cachescope_overview"
RANGES = ("24h", "7d", "30d", "90d", "all")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--heavy", type=int, default=4, help="Loaded sessions with 2,000 requests each.")
    parser.add_argument("--repeat", type=int, default=30, help="Timed requests per page.")
    parser.add_argument("--rebuild", action="store_true", help="Load the fleet again even if it was kept.")
    parser.add_argument("--raw", action="store_true", help="Also time each window summed from the requests.")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    built = database_ready(url, args, rebuild=args.rebuild)
    os.environ["DATABASE_URL"] = url
    os.environ["CACHESCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="cachescope-overview-")
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from benchmarks.fleet_clock import pin_wall_clock

    pin_wall_clock()
    from django.conf import settings

    # Pages link static files by their plain names, as the tests do: no collectstatic needed.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    fleet = prepare(args, built=built)
    if not built:
        mark_built(url, args)
    _backfill(rebuild=not built)
    print(f"fleet: {fleet.sessions:,} sessions, {fleet.requests:,} requests, {fleet.events:,} events")
    _measure(args)


def _backfill(*, rebuild: bool) -> None:
    from django.core.management import call_command

    if not rebuild and _rollups_count_every_request():
        return
    started = time.perf_counter()
    call_command("rollups_backfill")
    print(f"rollups backfill: {time.perf_counter() - started:.1f} s")


def _rollups_count_every_request() -> bool:
    """Whether the hour rollups count every timed request: a fleet built by ``benchmarks/listing.py``
    holds only the rollups of its ingested long logs (9 rows), which would time an empty overview."""
    from django.db.models import Sum

    from dashboard.models import Request, UsageRollup

    hours = UsageRollup.objects.filter(granularity=UsageRollup.Granularity.HOUR)
    rolled = hours.aggregate(requests=Sum("requests"))["requests"] or 0
    return rolled == Request.objects.filter(started_at__isnull=False).count()


def _measure(args: argparse.Namespace) -> None:
    viewer = _client("viewer")
    pages = [Page(f"overview: range={name}", f"/?range={name}") for name in RANGES]
    pages += [
        Page(f"wasted-writes panel: range={name}", f"/overview/wasted-writes/?range={name}")
        for name in RANGES
    ]
    pages += [
        Page(f"wasted-writes, uncached: range={name}", call=_wasted_first_view(viewer, name))
        for name in ("90d", "all")
    ]
    pages += [
        Page(f"wasted-writes, no ledgers: range={name}", call=_wasted_first_view(viewer, name, ledgers=False))
        for name in ("90d", "all")
    ]
    if args.raw:
        pages += [Page(f"raw sums: range={name}", call=_raw_sums(name)) for name in RANGES]
    heading = f"{'page':<40} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'SQL ms':>8} {'CPU ms':>8}"
    print(f"\n{heading}  target p95 < {TARGET_P95_MS:.0f} ms")
    for page in pages:
        result = _time_page(viewer, page, args.repeat)
        verdict = "MISSED" if result.missed else "ok"
        figures = f"{result.p50:8.1f} {result.p95:8.1f} {result.queries:8d} {result.sql_ms:8.1f}"
        print(f"{result.name:<40} {figures} {_cpu_ms(viewer, page):8.1f}  {verdict}", flush=True)
    print(f"\nload average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def _cpu_ms(client: Any, page: Page, reads: int = 5) -> float:
    """The median CPU time this process spent on one read: on a busy machine wall time also counts
    other processes' turns; this does not (the database's own work is in the SQL column)."""
    from benchmarks.listing import _fetch

    spent = []
    for _ in range(reads):
        started = time.process_time()
        _fetch(client, page)
        spent.append(time.process_time() - started)
    return sorted(spent)[len(spent) // 2] * 1000


def _wasted_first_view(client: Any, name: str, *, ledgers: bool = True) -> Any:
    """The wasted-writes panel as the first reader after a price change or a restart reads it (this
    process's cache emptied; the sessions' cost ledgers stay). Without ``ledgers``: every
    candidate's cost figured from its requests, and its ledger stored, as after the upgrade that
    brought ledgers before ``migrate`` made the missing ones (dashboard/costs/migrate_hooks.py); now only
    ledgers deleted by hand leave the panel so."""

    def call() -> Any:
        from django.core.cache import cache

        from benchmarks.listing_pages import get
        from dashboard.models import SessionCostLedger

        cache.clear()  # this process's own memory cache: no one else's
        if not ledgers:
            SessionCostLedger.objects.all().delete()
        return get(client, f"/overview/wasted-writes/?range={name}")

    return call


def _raw_sums(name: str) -> Any:
    """The window's usage by day and source summed from the requests: what the rollups replace."""

    def call() -> list[Any]:
        from django.db.models import Sum
        from django.db.models.functions import TruncDay

        from dashboard.fleet.usage import fleet_window
        from dashboard.models import Request

        window = fleet_window(name)
        assert window is not None
        return list(
            Request.objects.filter(started_at__gte=window.start, started_at__lt=window.end)
            .annotate(day=TruncDay("started_at"))
            .values("day", "session__source__name", "model")
            .annotate(read=Sum("cache_read_tokens"), uncached=Sum("uncached_input_tokens"))
            .order_by()
        )

    return call


if __name__ == "__main__":
    main()
