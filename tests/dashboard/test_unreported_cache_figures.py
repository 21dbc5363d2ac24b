"""A cache read or cache write figure no request behind it reported is unknown: every page shows it
as "—" with a title that says so, the exports as null; a reported 0 stays 0.

DeepSeek logs report neither reads nor writes, OpenAI ones reads but no writes.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import Request, Session, Source, UsageRollup
from dashboard.sessions.listing import PAGE_SIZE
from dashboard.sessions.summaries import session_refresh_summary
from dashboard.templatetags.cachescope import UNREPORTED_TITLE
from tests.dashboard.migration_states import migrated_to

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 4, 15, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is an hour after the requests these tests store."""
    wall_clock(T0 + timedelta(hours=1))


UNREPORTED = (1_000, None, None, None)
"""(uncached, read, write 5m, write 1h): a DeepSeek request as its logs give it."""
READS_ONLY = (700, 300, None, None)
"""An OpenAI request: cached tokens, but no write figure."""
ZEROS = (1_000, 0, 0, 0)
"""A request that reported reading and writing nothing."""


def stored_session(
    name: str, *usages: tuple[int, int | None, int | None, int | None], source: str = "farm"
) -> Session:
    """A session with one request per usage, a minute apart, its summary and the rollups refreshed."""
    session = Session.objects.create(
        source=Source.objects.get_or_create(name=source)[0], external_id=name, format="dsh", started_at=T0
    )
    for ordinal, (uncached, read, write_5m, write_1h) in enumerate(usages):
        Request.objects.create(
            session=session,
            ordinal=ordinal,
            key=f"{name}-{ordinal}",
            provider="deepseek",
            model="deepseek-chat",
            started_at=T0 + timedelta(minutes=ordinal),
            uncached_input_tokens=uncached,
            cache_read_tokens=read,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            output_tokens=10,
        )
    session_refresh_summary(session)
    rollups_rebuild()
    return session


def figure(html: str, label: str) -> tuple[str, str]:
    """The (title, text) of the figure ``label`` in the page's first figures panel."""
    match = re.search(rf'{label}</span><span class="value"(?: title="([^"]*)")?>([^<]*)</span>', html)
    assert match is not None, label
    return match.group(1) or "", match.group(2)


def session_page(client: Client, session: Session) -> str:
    response = client.get(session.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def test_a_session_whose_requests_report_no_cache_figure_shows_read_and_write_as_unknown(
    viewer_client: Client,
) -> None:
    session = stored_session("deepseek", UNREPORTED, UNREPORTED)

    html = session_page(viewer_client, session)

    assert figure(html, "Cache read") == (UNREPORTED_TITLE, "—")
    assert figure(html, "Cache write") == (UNREPORTED_TITLE, "—")
    assert figure(html, "Uncached input")[1] == "2k"


def test_a_session_without_reported_writes_shows_its_writes_as_unknown(
    viewer_client: Client,
) -> None:
    session = stored_session("openai", READS_ONLY, READS_ONLY)

    html = session_page(viewer_client, session)

    assert figure(html, "Cache read") == ("600", "600")
    assert figure(html, "Cache write") == (UNREPORTED_TITLE, "—")
    assert "· $0" not in html


def test_a_session_that_reported_reading_and_writing_nothing_shows_0(viewer_client: Client) -> None:
    session = stored_session("zeros", ZEROS, ZEROS)

    html = session_page(viewer_client, session)

    assert figure(html, "Cache read") == ("0", "0")
    assert figure(html, "Cache write") == ("0", "0")


def test_a_session_whose_requests_report_a_bucket_only_sometimes_shows_what_they_reported(
    viewer_client: Client,
) -> None:
    session = stored_session("mixed", UNREPORTED, (100, 250, None, 40))

    html = session_page(viewer_client, session)

    assert figure(html, "Cache read")[1] == "250"
    assert figure(html, "Cache write")[1] == "40"


def list_cells(client: Client, **params: str) -> dict[str, tuple[str, str]]:
    """Each listed session's (Write, Read) cells, by title."""
    response = client.get(reverse("dashboard:sessions"), params)
    assert response.status_code == 200
    cells = {}
    for row in re.findall(r"<tr>(.*?)</tr>", response.content.decode(), flags=re.S):
        name = re.search(r'<a href="/sessions/\d+/">([^<]*)</a>', row)
        if name is None:
            continue
        numbers = re.findall(r'<td class="num(?: wide)?"(?: title="[^"]*")?>([^<]*)</td>', row)
        cells[name.group(1)] = (numbers[3], numbers[4])  # events, requests, uncached, write, read
    return cells


def test_the_sessions_list_shows_an_unreported_read_or_write_as_unknown_and_a_reported_0_as_0(
    viewer_client: Client,
) -> None:
    stored_session("deepseek", UNREPORTED)
    stored_session("openai", READS_ONLY)
    stored_session("zeros", ZEROS)

    cells = list_cells(viewer_client)

    assert cells == {"deepseek": ("—", "—"), "openai": ("—", "300"), "zeros": ("0", "0")}
    html = viewer_client.get(reverse("dashboard:sessions")).content.decode()
    assert html.count(f'title="{UNREPORTED_TITLE}"') == 3


def test_sorting_the_list_by_read_puts_an_unreported_read_below_a_reported_0_and_pages_past_them(
    viewer_client: Client,
) -> None:
    stored_session("zeros", ZEROS)
    stored_session("openai", READS_ONLY)
    for n in range(PAGE_SIZE):
        stored_session(f"deepseek-{n:02}", UNREPORTED)

    ascending = viewer_client.get(reverse("dashboard:sessions"), {"sort": "read"}).context["page"]
    assert all(row.cache_read_tokens is None for row in ascending.rows)
    second = viewer_client.get(
        reverse("dashboard:sessions"), {"sort": "read", "after": ascending.next_cursor}
    )
    assert [row.external_id for row in second.context["page"].rows] == ["zeros", "openai"]
    descending = viewer_client.get(reverse("dashboard:sessions"), {"sort": "-read"}).context["page"]
    assert [row.external_id for row in descending.rows[:3]] == ["openai", "zeros", "deepseek-49"]
    by_write = viewer_client.get(reverse("dashboard:sessions"), {"sort": "-write"}).context["page"]
    assert by_write.rows[0].external_id == "zeros"


def test_the_prompt_tokens_filter_counts_a_session_whose_cache_figures_are_unknown(
    viewer_client: Client,
) -> None:
    stored_session("deepseek", UNREPORTED)

    assert list_cells(viewer_client, min_tokens="1000").keys() == {"deepseek"}
    assert list_cells(viewer_client, min_tokens="1001") == {}


def test_the_exports_say_null_where_the_list_shows_unknown(viewer_client: Client) -> None:
    stored_session("deepseek", UNREPORTED)
    stored_session("openai", READS_ONLY)
    stored_session("zeros", ZEROS)

    response = viewer_client.get(reverse("dashboard:sessions_export", args=["json"]))
    rows = {row["session_id"]: row for row in json.loads(b"".join(response.streaming_content))}
    figures = {name: (row["cache_creation_tokens"], row["cache_read_tokens"]) for name, row in rows.items()}
    assert figures == {"deepseek": (None, None), "openai": (None, 300), "zeros": (0, 0)}
    response = viewer_client.get(reverse("dashboard:sessions_export", args=["csv"]))
    table = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    cells = {row["session_id"]: (row["cache_creation_tokens"], row["cache_read_tokens"]) for row in table}
    assert cells == {"deepseek": ("", ""), "openai": ("", "300"), "zeros": ("0", "0")}


def overview_html(client: Client) -> str:
    response = client.get(reverse("dashboard:overview"), {"range": "24h"})
    assert response.status_code == 200
    return response.content.decode()


def test_the_overview_shows_a_ranges_read_and_write_as_unknown_when_no_request_reported_them(
    viewer_client: Client,
) -> None:
    stored_session("deepseek", UNREPORTED)

    html = overview_html(viewer_client)

    assert figure(html, "Cache read") == (UNREPORTED_TITLE, "—")
    assert figure(html, "Cache write") == (UNREPORTED_TITLE, "—")
    source_row = re.search(
        r"<td class=\"num\">1</td>\s*<td class=\"num wide\">1</td>(.*?)</tr>", html, flags=re.S
    )
    assert source_row is not None
    assert source_row.group(1).count(f'title="{UNREPORTED_TITLE}">—</td>') == 2  # cache write, cache read


def test_the_overview_shows_the_reported_read_beside_an_unknown_write(viewer_client: Client) -> None:
    stored_session("deepseek", UNREPORTED)
    stored_session("openai", READS_ONLY)

    html = overview_html(viewer_client)

    assert figure(html, "Cache read") == ("300", "300")
    assert figure(html, "Cache write") == (UNREPORTED_TITLE, "—")


def test_the_overview_shows_a_reported_0_as_0(viewer_client: Client) -> None:
    stored_session("zeros", ZEROS)

    html = overview_html(viewer_client)

    assert figure(html, "Cache read") == ("0", "0")
    assert figure(html, "Cache write") == ("0", "0")


def test_each_rollup_counts_the_requests_that_reported_a_read_and_a_write() -> None:
    stored_session("deepseek", UNREPORTED)
    stored_session("openai", READS_ONLY, (10, 5, 0, None), source="other")

    counts = {
        (row.source.name, row.granularity): (row.cache_reported, row.read_reported, row.write_reported)
        for row in UsageRollup.objects.select_related("source")
    }

    assert counts == {
        ("farm", "hour"): (0, 0, 0),
        ("farm", "day"): (0, 0, 0),
        ("other", "hour"): (2, 2, 1),
        ("other", "day"): (2, 2, 1),
    }


BEFORE = [("dashboard", "0031_ingest_job_duplicates_apart")]
AFTER = [("dashboard", "0033_rollup_read_write_reported")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_nulls_the_stored_sums_no_request_reported_and_keeps_reported_zeros() -> None:
    apps = migrated_to(BEFORE)
    source = apps.get_model("dashboard", "Source").objects.create(name="farm")
    sessions = {}
    model = apps.get_model("dashboard", "Session")
    request = apps.get_model("dashboard", "Request")
    for name, usage in (("deepseek", UNREPORTED), ("openai", READS_ONLY), ("zeros", ZEROS), ("empty", None)):
        sessions[name] = model.objects.create(
            source=source, external_id=name, format="dsh", cache_read_tokens=0, cache_write_tokens=0
        )
        if usage is not None:
            uncached, read, write_5m, write_1h = usage
            request.objects.create(
                session=sessions[name],
                ordinal=0,
                key=name,
                started_at=T0,
                uncached_input_tokens=uncached,
                cache_read_tokens=read,
                cache_write_5m_tokens=write_5m,
                cache_write_1h_tokens=write_1h,
            )
    apps.get_model("dashboard", "UsageRollup").objects.create(
        granularity="hour", bucket_start=T0, source=source, model="", requests=3, cache_reported=2
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    stored = apps.get_model("dashboard", "Session").objects.values_list(
        "external_id", "cache_read_tokens", "cache_write_tokens"
    )
    assert sorted(stored) == [
        ("deepseek", None, None),
        ("empty", None, None),
        ("openai", 0, None),
        ("zeros", 0, 0),
    ]
    rollup = apps.get_model("dashboard", "UsageRollup").objects.get()
    assert (rollup.read_reported, rollup.write_reported) == (2, 1)
    with connection.cursor() as cursor:
        indexes = {index for index in connection.introspection.get_constraints(cursor, "dashboard_session")}
    assert {"session_sort_read", "session_sort_write", "session_sort_hit_rate"} <= indexes

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
