from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

import pytest
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.models import Session, Source
from dashboard.sessions.listing import PAGE_SIZE, SessionFilters, keyset_page

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def make_sessions(count: int, *, source: str = "farm") -> list[Session]:
    origin, _ = Source.objects.get_or_create(name=source)
    return Session.objects.bulk_create(
        Session(
            source=origin,
            external_id=f"{source}-{i:04d}",
            title=f"Task {i}",
            format="dsh",
            started_at=T0 + timedelta(hours=i),
            last_activity=T0 + timedelta(hours=i // 3),  # ties, so the id must break them
            request_count=i % 7,
            cache_read_tokens=1000 * (i % 5),
            uncached_input_tokens=100,
            hit_rate=None if i % 4 == 0 else (i % 10) / 10,
            warning_count=i % 2,
            cost_usd=None if i % 6 == 0 else (Decimal(i % 9) / 7).quantize(Decimal("1e-8")),  # ties
        )
        for i in range(count)
    )


def walk(query: str) -> list[str]:
    """Every session of a listing, page after page, following the next cursors."""
    seen: list[str] = []
    params = QueryDict(query, mutable=True)
    filters = SessionFilters.from_query(params)
    while True:
        page = keyset_page(filters, Session.objects.all(), params)
        seen += [s.external_id for s in page.rows]
        if not page.next_cursor:
            return seen
        params["after"] = page.next_cursor


@pytest.mark.parametrize(
    "sort", ["-activity", "activity", "-hit_rate", "hit_rate", "title", "-requests", "-cost", "cost"]
)
def test_walking_the_keyset_pages_yields_every_session_once_in_sort_order(sort: str) -> None:
    make_sessions(2 * PAGE_SIZE + 7)
    expected = list(
        SessionFilters.from_query(QueryDict(f"sort={sort}"))
        .ordered(Session.objects.all())
        .values_list("external_id", flat=True)
    )
    assert walk(f"sort={sort}") == expected
    assert len(set(expected)) == 2 * PAGE_SIZE + 7


def test_the_previous_cursor_returns_to_the_page_before() -> None:
    make_sessions(2 * PAGE_SIZE + 7)
    first = keyset_page(SessionFilters(), Session.objects.all(), QueryDict())
    second = keyset_page(SessionFilters(), Session.objects.all(), QueryDict(f"after={first.next_cursor}"))
    back = keyset_page(SessionFilters(), Session.objects.all(), QueryDict(f"before={second.previous_cursor}"))
    assert [s.pk for s in back.rows] == [s.pk for s in first.rows]
    assert not first.previous_cursor
    assert back.next_cursor


def test_a_mangled_cursor_starts_from_the_first_page() -> None:
    make_sessions(5)
    page = keyset_page(SessionFilters(), Session.objects.all(), QueryDict("after=not-a-cursor!!"))
    assert len(page.rows) == 5


def test_filters_narrow_by_source_date_warnings_hit_rate_and_tokens() -> None:
    make_sessions(40)
    make_sessions(3, source="laptop")
    assert set(walk("source=laptop")) == {"laptop-0000", "laptop-0001", "laptop-0002"}
    assert walk("source=farm&from=2026-03-01&to=2026-03-01&sort=started") == [
        f"farm-{i:04d}" for i in range(24)
    ]
    assert all(int(i[-4:]) % 2 == 1 for i in walk("source=farm&warnings=1"))
    high = walk("source=farm&hit_min=80&hit_max=90")
    assert high
    assert all(Session.objects.get(external_id=i).hit_rate in (0.8, 0.9) for i in high)
    rich = walk("source=farm&min_tokens=4100")
    assert rich
    assert all(int(i[-4:]) % 5 == 4 for i in rich)


def test_malformed_filter_values_are_named_and_ignored() -> None:
    filters = SessionFilters.from_query(QueryDict("hit_min=lots&from=yesterday&min_tokens=-3&sort=password"))
    assert set(filters.errors) == {"hit_min", "from", "min_tokens"}
    assert (filters.hit_min, filters.started_from, filters.min_tokens, filters.sort) == (
        None,
        None,
        None,
        "-activity",
    )


def test_the_list_page_runs_the_same_number_of_queries_however_many_sessions(viewer_client: Client) -> None:
    make_sessions(10)
    url = reverse("dashboard:sessions")
    viewer_client.get(url)  # warm the model-list cache
    with CaptureQueriesContext(connection) as small:
        viewer_client.get(url)
    make_sessions(150, source="laptop")
    viewer_client.get(url, {"sort": "-read"})  # prices the new sessions, as their analysis would
    with CaptureQueriesContext(connection) as large:
        response = viewer_client.get(url, {"sort": "-read"})
    assert len(large.captured_queries) == len(small.captured_queries)
    assert "Next" in response.content.decode()


def test_the_csv_export_holds_the_filtered_list_in_order(viewer_client: Client) -> None:
    make_sessions(12)
    Session.objects.filter(external_id="farm-0003").update(title='=HYPERLINK("http://x")')
    response = viewer_client.get(
        reverse("dashboard:sessions_export", args=["csv"]), {"warnings": "1", "sort": "title"}
    )
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["session_id"] for r in rows] == walk("warnings=1&sort=title")
    assert {r["title"] for r in rows if r["session_id"] == "farm-0003"} == {'\'=HYPERLINK("http://x")'}


def test_the_json_export_is_one_object_per_session(viewer_client: Client) -> None:
    make_sessions(3)
    response = viewer_client.get(reverse("dashboard:sessions_export", args=["json"]), {"sort": "started"})
    rows = json.loads(b"".join(response.streaming_content))
    assert [r["session_id"] for r in rows] == ["farm-0000", "farm-0001", "farm-0002"]
    assert rows[1]["cache_read_tokens"] == 1000
    assert all(a["started_at"] < b["started_at"] for a, b in pairwise(rows))
    assert viewer_client.get(reverse("dashboard:sessions_export", args=["xml"])).status_code == 404


def test_the_session_export_says_first_how_many_rows_it_holds(viewer_client: Client) -> None:
    make_sessions(5)
    response = viewer_client.get(reverse("dashboard:sessions_export", args=["json"]))
    body = b"".join(response.streaming_content).decode()
    assert int(response["X-Cachescope-Rows"]) == len(json.loads(body)) == Session.objects.count()
