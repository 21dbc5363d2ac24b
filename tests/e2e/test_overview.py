"""The overview over eight months of data: a dozen axis labels at most, gaps where nothing ran, and
a click on a point that opens the requests of its bucket and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import Request, Session, Source
from dashboard.sessions.summaries import session_refresh_summary

pytestmark = pytest.mark.e2e

FIRST_DAY = datetime(2025, 7, 1, 9, 0, tzinfo=UTC)
MAX_LABELS = 12


def months_of_fleet() -> None:
    """Eight months of sessions every third day from two sources, with a quiet month in the middle."""
    sources = [Source.objects.create(name=name) for name in ("build-farm", "laptop")]
    for day in range(0, 240, 3):
        if 100 <= day < 130:
            continue  # nothing ran that month: the charts must show a gap, not a line across it
        start = FIRST_DAY + timedelta(days=day)
        source = sources[day % 2]
        session = Session.objects.create(
            source=source, external_id=f"day-{day}", format="dsh", started_at=start, last_activity=start
        )
        for ordinal in range(3):
            read = 2_000 * ordinal + 40 * (day % 50)
            Request.objects.create(
                session=session,
                ordinal=ordinal,
                key=f"r{ordinal}",
                provider="anthropic",
                model="claude-sonnet-4",
                started_at=start + timedelta(minutes=5 * ordinal),
                uncached_input_tokens=300,
                cache_read_tokens=read,
                cache_write_5m_tokens=1_500,
                output_tokens=40,
            )
        session_refresh_summary(session)  # the list's sums, as an ingest keeps them
    rollups_rebuild()  # rows made here bypass the ingest that keeps the rollups


def tick_labels(page: Any, chart: str) -> list[str]:
    return page.locator(f'[data-cache-chart="{chart}"] .xtick text').all_inner_texts()


def test_the_overview_over_months_keeps_a_dozen_labels_and_opens_a_buckets_requests(
    live_server: Any, page: Any, login_as: Any, screenshot: Any, wall_clock: Any
) -> None:
    months_of_fleet()
    wall_clock(FIRST_DAY + timedelta(days=240))  # the ranges count back from the fleet's last day
    login_as("viewer")

    for name in ("all", "90d", "30d", "7d"):
        page.goto(f"{live_server.url}/?range={name}")
        expect(page.locator('[data-cache-chart="fleet-hit-rate-data"] .xtick text').first).to_be_visible()
        for chart in ("fleet-hit-rate-data", "fleet-sources-data"):
            labels = tick_labels(page, chart)
            assert 2 <= len(labels) <= MAX_LABELS, (name, chart, labels)
    page.goto(f"{live_server.url}/?range=all")
    expect(page.get_by_role("link", name="all")).to_have_attribute("aria-current", "page")
    points = page.locator('[data-cache-chart="fleet-hit-rate-data"] .scatterlayer .point')
    expect(points.first).to_be_visible()
    weeks = page.locator('[data-cache-chart="fleet-hit-rate-data"]').evaluate(
        "element => element.data[0].y.length"
    )
    assert points.count() < weeks  # the quiet month has no points, so no line joins across it
    wasted = page.locator("#fleet-wasted")
    wasted.scroll_into_view_if_needed()
    expect(wasted.get_by_role("link", name="Show the sessions that wasted the most")).to_have_count(0)
    expect(wasted.locator("table")).to_be_visible()  # the panel loaded itself once in view
    page.evaluate("window.scrollTo(0, 0)")
    screenshot("overview-all")

    points.last.click(force=True)

    page.wait_for_url("**/requests/?since=*")
    query = parse_qs(urlsplit(page.url).query)
    since = datetime.fromisoformat(query["since"][0])
    until = datetime.fromisoformat(query["until"][0])
    assert until - since == timedelta(days=7)
    in_bucket = Request.objects.filter(started_at__gte=since, started_at__lt=until)
    rows = page.locator("#request-table tbody tr")
    expect(rows).to_have_count(in_bucket.count())
    shown = {
        text.strip() for text in page.locator("#request-table tbody tr td:first-child a").all_inner_texts()
    }
    assert shown <= {str(session) for session in Session.objects.filter(requests__in=in_bucket)}
    assert in_bucket.count() > 0
    screenshot("bucket-requests")
