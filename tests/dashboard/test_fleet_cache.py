"""The overview's fleet panels give each bucket the engine's hit rate, by the same rule as every page.

The case the panels used to get wrong is a day that reported writes but no reads: 0 %, not unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.models import Request, Session, Source
from dashboard.services.rollups import rollups_refresh_sessions
from tests.dashboard.test_hit_rate_rule import CASES

DAY = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


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
    assert (bars["name"], line["name"]) == ("farm uncached", "farm hit rate")
    day = bars["x"].index(DAY.replace(hour=0).isoformat())
    assert (bars["y"][day], line["y"][day]) == (uncached or 0, expected)
