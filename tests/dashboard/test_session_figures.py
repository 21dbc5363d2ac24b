"""The session page's cost and charts come from the cache until a request, an analysis or a price changes."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.costs.ledger import session_cost_compute
from dashboard.costs.pricing import Price, price_match, prices_load
from dashboard.models import ModelPrice, Session, SessionAnalysis, Source
from dashboard.sessions import figures as figures_module
from dashboard.sessions.figures import SessionFigures, session_figures_cached
from tests.dashboard.test_analysis import MODEL, START, usage_row

pytestmark = pytest.mark.django_db


def session_of(requests: int) -> Session:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="s", format="dsh"
    )
    for ordinal in range(requests):
        add_request(session, ordinal)
    return session


def add_request(session: Session, ordinal: int) -> None:
    """A request with usage, and the session's counters moved on as the ingest moves them."""
    usage_row(session, ordinal, START + timedelta(minutes=ordinal), read=1_000 * ordinal, write=1_000)
    Session.objects.filter(pk=session.pk).update(
        request_count=F("request_count") + 1,
        cache_read_tokens=F("cache_read_tokens") + 1_000 * ordinal,
        cache_write_tokens=F("cache_write_tokens") + 1_000,
    )
    session.refresh_from_db()


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sessions whose figures were made afresh, in order."""
    made: list[int] = []
    original = figures_module.session_figures

    def counting(*, session: Session, analysis: SessionAnalysis | None) -> SessionFigures:
        made.append(session.pk)
        return original(session=session, analysis=analysis)

    monkeypatch.setattr(figures_module, "session_figures", counting)
    return made


def matching_price() -> Price:
    price = price_match(model=MODEL, prices=prices_load())
    assert price is not None
    return price


def figures(session: Session) -> SessionFigures:
    session.refresh_from_db()
    return session_figures_cached(
        session=session, analysis=SessionAnalysis.objects.filter(session=session).first()
    )


def test_a_second_view_reads_the_figures_from_the_cache(computed: list[int]) -> None:
    session = session_of(3)
    first = figures(session)
    assert figures(session) == first
    assert computed == [session.pk]
    assert first.cost == session_cost_compute(session=session)
    assert first.requests_chart is not None


def test_a_new_request_makes_the_figures_again(computed: list[int]) -> None:
    session = session_of(3)
    before = figures(session)
    add_request(session, 3)
    after = figures(session)
    assert computed == [session.pk, session.pk]
    assert after.cost.total > before.cost.total
    assert after.cost == session_cost_compute(session=session)


def test_a_price_change_makes_the_figures_again(computed: list[int]) -> None:
    session = session_of(3)
    before = figures(session)
    price = ModelPrice.objects.get(pattern=matching_price().pattern)
    price.cache_write_5m = price.cache_write_5m * 2
    price.save()
    after = figures(session)
    assert len(computed) == 2
    assert after.cost.total > before.cost.total


def test_a_removed_price_makes_the_figures_again(computed: list[int]) -> None:
    session = session_of(3)
    assert figures(session).cost.total is not None
    while (price := price_match(model=MODEL, prices=prices_load())) is not None:
        ModelPrice.objects.filter(pattern=price.pattern).delete()
    assert figures(session).cost.unpriced_requests == 3
    assert len(computed) == 2


def test_a_new_analysis_makes_the_figures_again(computed: list[int]) -> None:
    session = session_of(3)
    before = figures(session)
    session_analyse(session_id=session.pk)
    analysed = figures(session)
    assert len(computed) == 2
    assert analysed.requests_chart != before.requests_chart  # the predicted reads are drawn now
    assert figures(session) == analysed  # and kept again until the next change
    assert len(computed) == 2


def test_the_session_page_shows_the_cached_cost(viewer_client: Client, computed: list[int]) -> None:
    session = session_of(3)
    url = reverse("dashboard:session", args=[session.pk])
    first = viewer_client.get(url)
    second = viewer_client.get(url)
    assert first.context["cost"] == second.context["cost"] == session_cost_compute(session=session)
    assert first.context["cost"].total > Decimal(0)
    assert computed == [session.pk]
    assert 'id="requests-chart-data"' in second.content.decode()
