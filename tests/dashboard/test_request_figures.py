"""Each analysed request keeps its first-change cause, wasted tokens and cost, which the requests
list filters and sorts on."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from dashboard.models import ModelPrice, RequestAnalysis
from dashboard.services.analysis import session_analyse
from dashboard.services.costs import Tokens, price_match, prices_load, usage_cost
from dashboard.services.request_figures import FigureInput, request_figures, wasted_tokens
from tests.dashboard.test_analysis import MODEL, analysis_of, conversation, ingest_captures


def test_the_first_request_of_a_lineage_wastes_nothing() -> None:
    assert wasted_tokens(None, Tokens(uncached_input=5_000, cache_write_5m=9_000)) == 0


def test_what_the_previous_request_cached_and_this_one_did_not_read_is_wasted() -> None:
    previous = Tokens(cache_read=10_000, cache_write_5m=2_000)
    assert wasted_tokens(previous, Tokens(cache_read=12_000, cache_write_5m=300)) == 0
    assert wasted_tokens(previous, Tokens(cache_read=4_000, uncached_input=10, cache_write_5m=8_500)) == 8_000


def test_waste_never_exceeds_what_the_request_did_not_read_of_its_own_prompt() -> None:
    previous = Tokens(cache_read=50_000, cache_write_1h=5_000)
    after_compaction = Tokens(cache_read=3_000, uncached_input=20, cache_write_5m=4_000)
    assert wasted_tokens(previous, after_compaction) == 4_020


def test_lineages_are_followed_apart_and_unpriced_models_have_no_cost() -> None:
    calls = [
        FigureInput(1, "main", "house", Tokens(cache_write_5m=9_000)),
        FigureInput(2, "side", "house", Tokens(cache_write_5m=500)),
        FigureInput(3, "main", "house", Tokens(cache_read=2_000, cache_write_5m=7_000)),
        FigureInput(4, "side", "unknown", Tokens(cache_read=500)),
    ]
    figures = request_figures(calls=calls, prices=[])
    assert [figures[n].wasted_tokens for n in (1, 2, 3, 4)] == [0, 0, 7_000, 0]
    assert figures[3].cost is None


@pytest.mark.django_db
def test_storing_an_analysis_keeps_the_cause_the_waste_and_the_cost(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)

    first, second, third = (analysis_of(session, key) for key in ("msg_1", "msg_2", "msg_3"))
    assert (first.cause, second.cause, third.cause) == ("", "", "edited")
    # msg_2 left 1,700 read + 30 written cached; msg_3 read 1,600 of it.
    assert (first.wasted_tokens, second.wasted_tokens, third.wasted_tokens) == (0, 0, 130)
    price = price_match(model=MODEL, prices=prices_load())
    assert price is not None, "the seeded price table prices Sonnet 4"
    expected = usage_cost(tokens=Tokens(10, 1600, 150, 0, 20), price=price)
    assert third.cost == expected.quantize(Decimal("0.00000001"))


@pytest.mark.django_db
def test_the_refresh_command_figures_old_rows_again_at_the_current_prices(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)
    RequestAnalysis.objects.update(wasted_tokens=None, cost=None)
    ModelPrice.objects.create(
        pattern=MODEL,
        input=Decimal(1),
        output=Decimal(1),
        cache_write_5m=Decimal(1),
        cache_write_1h=Decimal(1),
        cache_read=Decimal(1),
        read_on="2026-01-01",
    )

    out = StringIO()
    call_command("refresh_request_figures", stdout=out)

    assert "3 analysed requests and 0 warnings in 1 sessions" in out.getvalue()
    third = analysis_of(session, "msg_3")
    assert third.wasted_tokens == 130
    assert third.cost == Decimal(10 + 1600 + 150 + 20) / 1_000_000
