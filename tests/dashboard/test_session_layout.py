"""The session page draws a chart only where it says something."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from dashboard.models import Session, Source
from tests.dashboard.test_analysis import START, usage_row

pytestmark = pytest.mark.django_db


@pytest.fixture
def session() -> Session:
    return Session.objects.create(source=Source.objects.create(name="laptop"), external_id="s", format="dsh")


def test_a_session_of_one_request_draws_no_requests_chart(viewer_client: Client, session: Session) -> None:
    usage_row(session, 0, START, read=0, write=4_000)
    response = viewer_client.get(session.get_absolute_url())
    assert response.context["requests_chart"] is None
    assert 'data-cache-chart="requests-chart-data"' not in response.content.decode()


def test_requests_that_reported_no_usage_draw_no_requests_chart(
    viewer_client: Client, session: Session
) -> None:
    for n in range(3):
        usage_row(session, n, START + timedelta(minutes=n), read=0, write=0, uncached=0)
    assert viewer_client.get(session.get_absolute_url()).context["requests_chart"] is None


def test_two_requests_with_usage_draw_the_chart(viewer_client: Client, session: Session) -> None:
    usage_row(session, 0, START, read=0, write=4_000)
    usage_row(session, 1, START + timedelta(minutes=1), read=4_000, write=100)
    assert viewer_client.get(session.get_absolute_url()).context["requests_chart"] is not None
