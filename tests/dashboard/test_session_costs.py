"""A session's cost is priced from its stored ledger while the ledger was made from the requests and
analysis the session has now; a price change re-prices it without reading a request."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.db.models import Sum
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.costs.ledger import cost_ledger, ledger_cost
from dashboard.costs.ledger import session_cost_compute as cost_off_the_requests
from dashboard.costs.pricing import Call, Tokens, price_match, prices_load
from dashboard.costs.session_costs import (
    ledger_as_json,
    ledger_of_json,
    session_inputs_key,
    sessions_cost,
)
from dashboard.models import (
    ModelPrice,
    Request,
    RequestAnalysis,
    Session,
    SessionAnalysis,
    SessionCostLedger,
    Source,
)
from dashboard.sessions.summaries import session_refresh_summary
from tests.dashboard.test_analysis import MODEL, START, usage_row
from tests.dashboard.test_session_figures import add_request

pytestmark = pytest.mark.django_db


def session_of(requests: int) -> Session:
    source, _ = Source.objects.get_or_create(name="laptop")
    session = Session.objects.create(source=source, external_id=f"s{Session.objects.count()}", format="dsh")
    for ordinal in range(requests):
        add_request(session, ordinal)
    return session


def keys_of(*sessions: Session) -> dict[int, str]:
    keyed = {}
    for session in sessions:
        session.refresh_from_db()
        analysis = SessionAnalysis.objects.filter(session=session).first()
        keyed[session.pk] = session_inputs_key(session=session, analysis=analysis)
    return keyed


def request_reads(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries if '"dashboard_request"' in query["sql"]]


def test_the_ledger_prices_a_session_as_its_calls_do() -> None:
    minute = timedelta(minutes=1)
    calls = [
        Call("main", MODEL, START, Tokens(50, 0, 10_000, 2_000, 10)),
        Call("main", MODEL, START + minute, Tokens(50, 12_000, 500, 0, 10)),
        Call("side", MODEL, START + 2 * minute, Tokens(10, 0, 3_000, 0, 5)),
        Call("main", MODEL, START + 20 * minute, Tokens(50, 0, 12_500, 0, 10)),  # the 5-minute write expired
        Call("main", "mystery-1", START + 21 * minute, Tokens(1, 0, 0, 0, 1)),
    ]
    ledger = cost_ledger(calls)

    assert ledger_of_json(ledger_as_json(ledger)) == ledger
    assert ledger[MODEL].requests == 4
    # The second call read back all the first wrote; its own 500 expired before the fourth; the side
    # lineage's 3,000 and the fourth call's 12,500 were never read (the unpriced call read nothing).
    assert ledger[MODEL].unread_5m == 500 + 3_000 + 12_500
    assert ledger[MODEL].again_5m == 12_500
    cost = ledger_cost(ledger, prices_load())
    assert (cost.priced_requests, cost.unpriced_requests, cost.unpriced_models) == (4, 1, ("mystery-1",))
    price = price_match(model=MODEL, prices=prices_load())
    assert price is not None
    assert cost.wasted_write_cost == (16_000 * price.cache_write_5m) / Decimal(1_000_000)


def test_the_analysis_stores_the_ledger_the_pages_read_without_the_requests() -> None:
    session = session_of(4)
    session_analyse(session_id=session.pk)

    with CaptureQueriesContext(connection) as queries:
        cost = sessions_cost(keys=keys_of(session))[session.pk]

    assert cost == cost_off_the_requests(session=session)
    assert cost.total is not None
    assert cost.total > 0
    assert request_reads(queries) == []
    assert SessionCostLedger.objects.get(session=session).inputs_key.endswith(keys_of(session)[session.pk])


def test_a_price_change_reprices_the_ledger_without_reading_a_request() -> None:
    session = session_of(3)
    session_analyse(session_id=session.pk)
    before = sessions_cost(keys=keys_of(session))[session.pk]
    price = ModelPrice.objects.get(pattern=price_match(model=MODEL, prices=prices_load()).pattern)  # type: ignore[union-attr]
    price.cache_write_5m *= 2
    price.input *= 2
    price.save()

    with CaptureQueriesContext(connection) as queries:
        after = sessions_cost(keys=keys_of(session))[session.pk]

    assert request_reads(queries) == []
    assert after == cost_off_the_requests(session=session)
    assert after.wasted_write_cost == 2 * before.wasted_write_cost > 0
    assert after.total is not None
    assert before.total is not None
    assert after.total > before.total


def test_a_ledger_made_from_fewer_requests_is_made_again_and_stored() -> None:
    session = session_of(3)
    session_analyse(session_id=session.pk)
    stale_key = keys_of(session)[session.pk]
    add_request(session, 3)  # ingested, not analysed yet: the session's key moves on

    with CaptureQueriesContext(connection) as queries:
        cost = sessions_cost(keys=keys_of(session))[session.pk]

    assert request_reads(queries), "the ledger was out of date: the requests had to be read"
    assert cost == cost_off_the_requests(session=session)
    assert cost.priced_requests == 4
    stored = SessionCostLedger.objects.get(session=session)
    assert stored.inputs_key.endswith(keys_of(session)[session.pk])
    assert not stored.inputs_key.endswith(stale_key)
    assert ledger_of_json(stored.tallies)[MODEL].requests == 4


def test_sessions_without_a_ledger_get_one_in_a_single_read_of_their_requests() -> None:
    first, second = session_of(2), session_of(3)
    for session in (first, second):
        session_analyse(session_id=session.pk)
    SessionCostLedger.objects.all().delete()  # analysed before ledgers were kept

    with CaptureQueriesContext(connection) as queries:
        costs = sessions_cost(keys=keys_of(first, second))

    assert len(request_reads(queries)) == 1
    assert costs == {s.pk: cost_off_the_requests(session=s) for s in (first, second)}
    assert SessionCostLedger.objects.count() == 2
    assert sessions_cost(keys={}) == {}


def test_the_session_page_shows_the_miss_cost_its_requests_sum(viewer_client: Client) -> None:
    # An OpenAI-style session caches without writes: nothing is re-written, yet the third request
    # failed to read 4,000 cached tokens and sent them again as plain input.
    session = session_of(0)
    for ordinal, read, uncached in ((0, 0, 9_000), (1, 8_000, 1_000), (2, 4_000, 6_000)):
        row = usage_row(session, ordinal, START + timedelta(minutes=ordinal), read, 0, uncached=uncached)
        Request.objects.filter(pk=row.pk).update(provider="openai", model="gpt-4.1")
    session_refresh_summary(session)
    session_analyse(session_id=session.pk)
    listed = RequestAnalysis.objects.filter(session=session).aggregate(total=Sum("wasted_tokens"))["total"]

    response = viewer_client.get(session.get_absolute_url())

    cost = response.context["cost"]
    assert (cost.rewritten_tokens, cost.reprocessed_tokens, listed) == (0, 4_000, 4_000)
    missed = RequestAnalysis.objects.filter(session=session).aggregate(total=Sum("miss_cost"))["total"]
    # 4,000 tokens sent again as input at $2 a million rather than read at $0.50: $0.006.
    assert missed == Decimal("0.006")
    figure = response.content.decode().split('id="session-miss-cost"')[1].split("</div>")[0]
    assert figure.endswith(">$0.006</span>")


def test_the_refresh_command_makes_the_ledgers_an_upgrade_left_missing_and_only_those() -> None:
    first, second = session_of(2), session_of(3)
    for session in (first, second):
        session_analyse(session_id=session.pk)
    SessionCostLedger.objects.filter(session=second).delete()  # analysed before ledgers were kept
    kept = SessionCostLedger.objects.get(session=first).pk

    out = StringIO()
    call_command("refresh_request_figures", stdout=out)

    assert out.getvalue().strip().endswith("; 1 session cost ledgers made; 0 session costs changed")
    assert SessionCostLedger.objects.get(session=first).pk == kept
    with CaptureQueriesContext(connection) as queries:
        costs = sessions_cost(keys=keys_of(first, second))
    assert request_reads(queries) == []
    assert costs[second.pk] == cost_off_the_requests(session=second)


def test_a_ledger_the_database_refuses_to_store_still_gives_the_page_its_cost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = session_of(3)
    session_analyse(session_id=session.pk)
    SessionCostLedger.objects.all().delete()

    def busy(*args: object, **kwargs: object) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(SessionCostLedger.objects, "bulk_create", busy)
    cost = sessions_cost(keys=keys_of(session))[session.pk]

    assert cost == cost_off_the_requests(session=session)
    assert not SessionCostLedger.objects.exists()
