"""Each analysed request keeps its first-change cause, re-processed tokens and cost, which the requests
list filters and sorts on."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import strategies as st

from dashboard.analysis.request_figures import FigureInput, reprocessed_tokens, request_figures
from dashboard.analysis.stored_sessions import session_analyse
from dashboard.costs.ledger import session_cost_of
from dashboard.costs.pricing import Call, Tokens, price_match, prices_load, usage_cost
from dashboard.ingest.files import ingest_paths
from dashboard.models import ModelPrice, RequestAnalysis, Session
from tests.dashboard.logs import clock_log
from tests.dashboard.test_analysis import MODEL, analysis_of, conversation, ingest_captures
from tests.dashboard.test_costs import SONNET


def test_the_first_request_of_a_lineage_re_processes_nothing() -> None:
    assert reprocessed_tokens(None, Tokens(uncached_input=5_000, cache_write_5m=9_000)) == 0


def test_what_the_previous_request_cached_and_this_one_did_not_read_is_re_processed() -> None:
    previous = Tokens(cache_read=10_000, cache_write_5m=2_000)
    assert reprocessed_tokens(previous, Tokens(cache_read=12_000, cache_write_5m=300)) == 0
    assert (
        reprocessed_tokens(previous, Tokens(cache_read=4_000, uncached_input=10, cache_write_5m=8_500))
        == 8_000
    )


def test_re_processing_never_exceeds_what_the_request_did_not_read_of_its_own_prompt() -> None:
    previous = Tokens(cache_read=50_000, cache_write_1h=5_000)
    after_compaction = Tokens(cache_read=3_000, uncached_input=20, cache_write_5m=4_000)
    assert reprocessed_tokens(previous, after_compaction) == 4_020


TOKENS = st.builds(
    Tokens,
    uncached_input=st.integers(0, 20_000),
    cache_read=st.integers(0, 60_000),
    cache_write_5m=st.integers(0, 20_000),
    cache_write_1h=st.integers(0, 20_000),
)


@given(TOKENS, TOKENS)
def test_what_a_request_re_wrote_is_part_of_what_it_re_processed(previous: Tokens, current: Tokens) -> None:
    # Both come from the one shortfall: re-written is the part of it the request wrote again.
    calls = [Call("main", "claude-sonnet-4", None, previous), Call("main", "claude-sonnet-4", None, current)]
    rewritten = session_cost_of(calls=calls, prices=[SONNET]).rewritten_tokens
    assert 0 <= rewritten <= reprocessed_tokens(previous, current)
    if current.uncached_input == 0:
        assert rewritten == reprocessed_tokens(previous, current)  # nothing else to send it as


def test_lineages_are_followed_apart_and_unpriced_models_have_no_cost() -> None:
    calls = [
        FigureInput(1, "main", "house", Tokens(cache_write_5m=9_000)),
        FigureInput(2, "side", "house", Tokens(cache_write_5m=500)),
        FigureInput(3, "main", "house", Tokens(cache_read=2_000, cache_write_5m=7_000)),
        FigureInput(4, "side", "unknown", Tokens(cache_read=500)),
    ]
    figures = request_figures(calls=calls, prices=[])
    assert [figures[n].reprocessed_tokens for n in (1, 2, 3, 4)] == [0, 0, 7_000, 0]
    assert figures[3].cost is None


@pytest.mark.django_db
def test_storing_an_analysis_keeps_the_cause_the_re_processed_tokens_and_the_cost(tmp_path: Path) -> None:
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
    figured = dict(RequestAnalysis.objects.values_list("request__key", "rewritten_tokens"))
    # As a release before 0030 left them: re-written by another rule, the rest not figured.
    RequestAnalysis.objects.update(wasted_tokens=None, cost=None, rewritten_tokens=999)
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
    assert dict(RequestAnalysis.objects.values_list("request__key", "rewritten_tokens")) == figured


@pytest.mark.django_db
def test_a_stored_miss_cost_is_the_one_explain_gives_and_prices_the_missed_write_at_the_write_rate(
    tmp_path: Path,
) -> None:
    path = clock_log(tmp_path)
    summary = ingest_paths(paths=[path], source_name="laptop", format="anthropic-capture")
    assert not summary.errors
    session_analyse(session_id=Session.objects.get().pk)
    out = StringIO()
    call_command("explain", str(path), "--json", stdout=out, stderr=StringIO())
    explained = {row["number"]: row for row in json.loads(out.getvalue())}

    stored = dict(RequestAnalysis.objects.values_list("request__ordinal", "miss_cost"))
    # Request 2 wrote again the 8,500 tokens request 1 had cached: 8,500 x ($3.75 - $0.30) / 1M.
    assert stored[1] == Decimal("0.029325")
    assert stored[0] == 0  # a cold start
    for ordinal, miss in stored.items():
        assert float(miss) == pytest.approx(explained[ordinal + 1]["miss_cost_usd"])
