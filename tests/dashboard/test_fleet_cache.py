"""The overview's fleet panels give each bucket the engine's hit rate, by the same rule as every page.

The case the panels used to get wrong is a day that reported writes but no reads: 0 %, not unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.costs.ledger import sessions_cost_compute
from dashboard.costs.pricing import price_match, prices_load
from dashboard.fleet.cache_panels import top_wasted_writes
from dashboard.fleet.rollups import rollups_rebuild, rollups_refresh_sessions
from dashboard.fleet.usage import fleet_window
from dashboard.models import ModelPrice, Request, Session, Source, Warning
from dashboard.sessions.summaries import session_refresh_summary
from tests.dashboard.test_analysis import MODEL, usage_row
from tests.dashboard.test_hit_rate_rule import CASES

DAY = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is a day after the requests these tests store."""
    wall_clock(DAY + timedelta(days=1))


def one_request_fleet(
    uncached: int | None, read: int | None, write_5m: int | None, write_1h: int | None
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="farm"), external_id="s1", format="dsh"
    )
    Request.objects.create(
        session=session,
        ordinal=0,
        key="r0",
        provider="anthropic",
        model="claude-sonnet-4",
        started_at=DAY,
        uncached_input_tokens=uncached,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
    )
    rollups_refresh_sessions(session_ids=[session.pk])


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_the_fleet_hit_rate_per_day_follows_the_rule(case: str, viewer_client: Client) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    one_request_fleet(uncached, read, write_5m, write_1h)

    response = viewer_client.get(reverse("dashboard:overview"), {"range": "7d"})

    points = response.context["fleet_points"]
    assert [(point.start.date(), point.hit_rate) for point in points] == [(DAY.date(), expected)]


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_the_fleet_hit_rate_per_source_follows_the_rule(case: str, viewer_client: Client) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    one_request_fleet(uncached, read, write_5m, write_1h)

    chart = viewer_client.get(reverse("dashboard:overview"), {"range": "7d"}).context["fleet_sources_chart"]

    bars, line = chart["data"]
    assert (bars["name"], line["name"], line["legendgroup"]) == ("farm", "farm hit rate", "farm")
    day = line["x"].index(DAY.replace(hour=0).isoformat())
    assert line["y"][day] == expected


def wasteful_session(name: str) -> Session:
    """A session whose 10,000-token write comes back after its 5-minute lifetime: nothing is read."""
    session = Session.objects.create(
        source=Source.objects.get_or_create(name="farm")[0], external_id=name, format="claude-code"
    )
    usage_row(session, 0, DAY, 0, 10_000, uncached=0)
    usage_row(session, 1, DAY + timedelta(minutes=20), 0, 10_000, uncached=0)
    session_refresh_summary(session)
    return session


def wasted(window_name: str = "all") -> list[tuple[str, int, Decimal]]:
    window = fleet_window(window_name)
    return [(row["session"].external_id, row["tokens"], row["cost"]) for row in top_wasted_writes(window)]


def figured_off_the_requests() -> list[tuple[str, int, Decimal]]:
    sessions = Session.objects.order_by("-cache_write_tokens", "id")
    costs = sessions_cost_compute(session_ids=[session.pk for session in sessions])
    return sorted(
        (
            (session.external_id, costs[session.pk].wasted_write_tokens, costs[session.pk].wasted_write_cost)
            for session in sessions
            if costs[session.pk].wasted_write_tokens
        ),
        key=lambda row: (-row[2], -row[1]),
    )


@pytest.mark.django_db
def test_the_wasted_writes_panel_shows_again_what_it_figured_without_reading_the_requests() -> None:
    wasteful_session("one")
    wasteful_session("two")
    rollups_rebuild()
    first = wasted()

    with CaptureQueriesContext(connection) as queries:
        again = wasted()

    assert first == again == figured_off_the_requests()
    assert first[0][1] == 20_000
    assert not [query for query in queries if '"dashboard_request"' in query["sql"]]


@pytest.mark.django_db
def test_the_wasted_writes_panel_figures_a_session_again_once_it_has_a_new_request() -> None:
    session = wasteful_session("one")
    rollups_rebuild()
    assert wasted()[0][1] == 20_000

    usage_row(session, 2, DAY + timedelta(minutes=21), 10_000, 4_000, uncached=0)  # reads the last write
    session_refresh_summary(session)
    rollups_rebuild()

    assert wasted() == figured_off_the_requests()
    assert wasted()[0][1] == 10_000 + 4_000  # the first write expired, the last is never read


@pytest.mark.django_db
def test_the_wasted_writes_panel_prices_the_waste_again_when_a_price_changes() -> None:
    wasteful_session("one")
    rollups_rebuild()
    before = wasted()[0][2]

    price = ModelPrice.objects.get(pattern=price_match(model=MODEL, prices=prices_load()).pattern)
    price.cache_write_5m *= 2
    price.save()

    assert wasted()[0][2] == before * 2 == figured_off_the_requests()[0][2]


@pytest.mark.django_db
def test_warnings_by_kind_count_the_warnings_of_the_chosen_range(viewer_client: Client) -> None:
    one_request_fleet(100, 900, 0, 0)
    session = Session.objects.get()
    for place, at in (("early", DAY - timedelta(days=40)), ("late", DAY), ("no moment", None)):
        Warning.objects.create(
            session=session,
            kind=Warning.Kind.UNEXPLAINED_MISS,
            place=place,
            message="m",
            count=2,
            happened_at=at,
        )

    def seen(range_name: str) -> list[int]:
        chart = viewer_client.get(reverse("dashboard:overview"), {"range": range_name}).context[
            "warnings_chart"
        ]
        return list(chart["data"][0]["y"])

    def recent(range_name: str) -> list[str]:
        listed = viewer_client.get(reverse("dashboard:overview"), {"range": range_name}).context[
            "recent_warnings"
        ]
        return sorted(warning.place for warning in listed)

    assert seen("7d") == [2]
    assert seen("all") == [6]
    assert recent("7d") == ["late"]
    assert recent("all") == ["early", "late", "no moment"]
    Warning.objects.filter(place="late").delete()
    response = viewer_client.get(reverse("dashboard:overview"), {"range": "7d"})
    assert response.context["warnings_chart"] is None
    assert "No warnings in this range." in response.content.decode()


@pytest.mark.django_db
def test_warnings_by_kind_tick_only_at_whole_counts(viewer_client: Client) -> None:
    one_request_fleet(100, 900, 0, 0)
    Warning.objects.create(
        session=Session.objects.get(),
        kind=Warning.Kind.UNEXPLAINED_MISS,
        place="p",
        message="m",
        count=2,
        happened_at=DAY,
    )

    chart = viewer_client.get(reverse("dashboard:overview"), {"range": "7d"}).context["warnings_chart"]

    axis = chart["layout"]["yaxis"]
    assert (axis["tickformat"], axis["rangemode"], axis["tick0"], axis["dtick"]) == (",d", "tozero", 0, 1)
