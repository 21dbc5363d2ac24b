"""Pages that show a figure per session read them in a fixed number of queries, however many rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.costs.ledger import session_cost_compute, sessions_cost_compute
from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import ModelPrice, Request, Session, Source
from dashboard.sessions.summaries import session_refresh_summary

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def fleet(sessions: int) -> list[Session]:
    """``sessions`` priced sessions of three requests each, every one writing cache it partly wastes."""
    ModelPrice.objects.create(
        pattern="house-model",
        input=Decimal(2),
        output=Decimal(10),
        cache_write_5m=Decimal("2.5"),
        cache_write_1h=Decimal(4),
        cache_read=Decimal("0.2"),
        read_on=T0.date(),
    )
    source = Source.objects.create(name="farm")
    stored = []
    for n in range(sessions):
        session = Session.objects.create(source=source, external_id=f"s{n}", format="dsh")
        for ordinal in range(3):
            Request.objects.create(
                session=session,
                ordinal=ordinal,
                key=f"r{ordinal}",
                provider="anthropic",
                model="house-model",
                started_at=T0 + timedelta(seconds=30 * ordinal + n),
                uncached_input_tokens=10 + n,
                cache_read_tokens=1_000 * ordinal,
                cache_write_5m_tokens=1_000 + n,
                output_tokens=100,
            )
        session_refresh_summary(session)
        stored.append(session)
    rollups_rebuild()
    return stored


def queries_of(client: Client, url: str) -> int:
    cache.clear()  # both counts start cold: the model list the session filter offers is cached
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.django_db
def test_the_costs_of_many_sessions_are_those_of_each_one_alone() -> None:
    sessions = fleet(4)
    together = sessions_cost_compute(session_ids=[s.pk for s in sessions])
    assert together == {s.pk: session_cost_compute(session=s) for s in sessions}
    assert len({cost.total for cost in together.values()}) == 4  # each session priced on its own rows


@pytest.mark.django_db
def test_the_costs_of_five_or_fifty_sessions_take_the_same_two_queries() -> None:
    ids = [s.pk for s in fleet(50)]
    for listed in (ids[:5], ids):
        with CaptureQueriesContext(connection) as captured:
            costs = sessions_cost_compute(session_ids=listed)
        assert len(costs) == len(listed)
        assert len(captured.captured_queries) == 2


@pytest.mark.django_db
def test_no_sessions_cost_nothing_and_query_nothing() -> None:
    with CaptureQueriesContext(connection) as captured:
        assert sessions_cost_compute(session_ids=[]) == {}
    assert captured.captured_queries == []


@pytest.mark.parametrize("page", ["dashboard:overview", "dashboard:sessions"])
def test_a_page_of_fifty_sessions_takes_as_many_queries_as_one_of_five(
    page: str, viewer_client: Client
) -> None:
    fleet(5)
    few = queries_of(viewer_client, reverse(page))
    Session.objects.all().delete()
    Source.objects.all().delete()
    ModelPrice.objects.filter(pattern="house-model").delete()
    fleet(50)
    assert queries_of(viewer_client, reverse(page)) == few
