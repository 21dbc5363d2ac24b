from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from dashboard.costs.ledger import session_cost_compute, session_cost_of
from dashboard.costs.pricing import (
    Call,
    Price,
    Tokens,
    cached_shortfall,
    price_match,
    sessions_cost_map,
    usage_cost,
)
from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import ModelPrice, Request, Session, Source
from dashboard.sessions.summaries import session_refresh_summary
from dashboard.web.money import usd
from projections.usage import openai_responses_usage

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is a day after the requests these tests store."""
    wall_clock(T0 + timedelta(days=1))


SONNET = Price(
    pattern="claude-sonnet-4",
    input=Decimal("3"),
    output=Decimal("15"),
    cache_write_5m=Decimal("3.75"),
    cache_write_1h=Decimal("6"),
    cache_read=Decimal("0.30"),
)
PRICES = [
    SONNET,
    Price("claude-opus-4", Decimal(15), Decimal(75), Decimal("18.75"), Decimal(30), Decimal("1.5")),
    Price("claude-opus-4-1", Decimal(15), Decimal(75), Decimal("18.75"), Decimal(30), Decimal("1.5")),
    Price("claude-opus-4-6", Decimal(5), Decimal(25), Decimal("6.25"), Decimal(10), Decimal("0.5")),
    Price("gpt-5", Decimal("1.25"), Decimal(10), Decimal("1.25"), Decimal("1.25"), Decimal("0.125")),
    Price("gemini-*-flash", Decimal("0.3"), Decimal("2.5"), Decimal("0.3"), Decimal("0.3"), Decimal("0.03")),
]


def call(
    *,
    read: int = 0,
    write_5m: int = 0,
    write_1h: int = 0,
    at: float = 0,
    lineage: str = "main",
    model: str = "claude-sonnet-4-20250514",
) -> Call:
    tokens = Tokens(
        uncached_input=0, cache_read=read, cache_write_5m=write_5m, cache_write_1h=write_1h, output=0
    )
    return Call(lineage=lineage, model=model, started_at=T0 + timedelta(seconds=at), tokens=tokens)


def test_a_usage_costs_the_exact_sum_of_its_buckets() -> None:
    tokens = Tokens(
        uncached_input=1234, cache_read=100_000, cache_write_5m=2_000, cache_write_1h=1_000, output=567
    )
    # 1234*3 + 100000*0.30 + 2000*3.75 + 1000*6 + 567*15
    # = 3702 + 30000 + 7500 + 6000 + 8505 = 55707 micro-dollars
    assert usage_cost(tokens=tokens, price=SONNET) == Decimal("0.055707")


def test_the_longest_matching_pattern_wins() -> None:
    assert price_match(model="claude-opus-4-1-20250805", prices=PRICES).pattern == "claude-opus-4-1"  # type: ignore[union-attr]
    assert price_match(model="claude-opus-4-20250514", prices=PRICES).pattern == "claude-opus-4"  # type: ignore[union-attr]
    assert price_match(model="claude-opus-4-6", prices=PRICES).pattern == "claude-opus-4-6"  # type: ignore[union-attr]


def test_a_pattern_does_not_match_a_later_version_of_the_same_name() -> None:
    assert price_match(model="gpt-5-2025-08-07", prices=PRICES).pattern == "gpt-5"  # type: ignore[union-attr]
    assert price_match(model="gpt-5.4", prices=PRICES) is None
    assert price_match(model="claude-opus-45", prices=PRICES) is None


def test_router_and_bedrock_spellings_find_the_same_price() -> None:
    for name in (
        "anthropic/claude-sonnet-4",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "CLAUDE-SONNET-4@20250514",
    ):
        assert price_match(model=name, prices=PRICES) is SONNET


def test_a_star_in_a_pattern_matches_any_run() -> None:
    assert price_match(model="gemini-2.5-flash", prices=PRICES).pattern == "gemini-*-flash"  # type: ignore[union-attr]
    assert price_match(model="", prices=PRICES) is None


def test_a_write_that_the_next_request_reads_back_is_not_wasted() -> None:
    cost = session_cost_of(calls=[call(read=0, write_5m=5000), call(read=5000, at=60)], prices=PRICES)
    assert cost.wasted_write_tokens == 0
    assert cost.wasted_write_cost == 0


def test_a_five_minute_write_read_after_its_lifetime_is_wasted() -> None:
    cost = session_cost_of(calls=[call(write_5m=5000), call(read=5000, at=301)], prices=PRICES)
    assert cost.wasted_write_tokens == 5000
    assert cost.wasted_write_cost == Decimal("0.01875")  # 5000 * 3.75 / 1e6


def test_a_one_hour_write_survives_a_ten_minute_gap() -> None:
    calls = [call(write_1h=4000, write_5m=1000), call(read=5000, at=600)]
    cost = session_cost_of(calls=calls, prices=PRICES)
    # The 1-hour part (first 4000 tokens) is read back; the 5-minute part expired.
    assert cost.wasted_write_tokens == 1000
    assert cost.wasted_write_cost == Decimal("0.00375")


def test_the_unread_part_of_a_write_is_wasted() -> None:
    cost = session_cost_of(calls=[call(read=10_000, write_5m=3000), call(read=11_000, at=10)], prices=PRICES)
    assert cost.wasted_write_tokens == 2000


def test_the_last_write_of_each_lineage_is_wasted_and_lineages_are_separate() -> None:
    calls = [
        call(write_5m=1000),
        call(write_5m=700, lineage="subagent", at=1),
        call(read=1000, at=2),
        call(read=700, at=3, lineage="subagent"),
    ]
    cost = session_cost_of(calls=calls, prices=PRICES)
    assert cost.wasted_write_tokens == 0
    cost = session_cost_of(calls=[*calls, call(read=1000, write_5m=250, at=4)], prices=PRICES)
    assert cost.wasted_write_tokens == 250


def test_a_request_that_misses_part_of_the_cached_prefix_writes_it_again() -> None:
    calls = [call(read=8000, write_5m=2000), call(read=6000, write_5m=4500, at=30)]
    cost = session_cost_of(calls=calls, prices=PRICES)
    assert cost.rewritten_tokens == 4000  # 8000 + 2000 cached, 6000 read back
    assert cost.rewritten_cost == Decimal("0.015")


def test_the_shortfall_is_what_the_previous_request_left_cached_and_this_one_did_not_read() -> None:
    previous = Tokens(cache_read=8_000, cache_write_5m=2_000, cache_write_1h=500)
    assert cached_shortfall(previous, Tokens(cache_read=6_000, uncached_input=99)) == 4_500
    assert cached_shortfall(previous, Tokens(cache_read=11_000)) == 0  # read more than was cached


def test_a_session_without_priced_requests_has_no_total() -> None:
    cost = session_cost_of(calls=[call(write_5m=10, model="mystery-1")], prices=PRICES)
    assert cost.total is None
    assert cost.unpriced_requests == 1
    assert cost.unpriced_models == ("mystery-1",)


def test_an_unpriced_model_s_wasted_and_re_written_tokens_are_counted_without_a_cost() -> None:
    # Tokens are the provider's usage, known whatever the price table holds; only the costs are not.
    calls = [
        call(read=8000, write_5m=2000, model="mystery-1"),
        call(read=6000, write_5m=4500, at=30, model="mystery-1"),
    ]
    cost = session_cost_of(calls=calls, prices=PRICES)
    assert (cost.rewritten_tokens, cost.wasted_write_tokens) == (4000, 2000 + 4500)  # the first expired
    assert (cost.total, cost.rewritten_cost, cost.wasted_write_cost) == (None, None, None)
    # Beside a priced model, the costs are the priced model's share.
    mixed = session_cost_of(calls=[*calls, call(write_5m=1000, at=31, lineage="side")], prices=PRICES)
    assert mixed.wasted_write_tokens == 6500 + 1000
    assert (
        mixed.wasted_write_cost
        == session_cost_of(calls=[call(write_5m=1000)], prices=PRICES).wasted_write_cost
    )


@given(
    st.lists(
        st.tuples(
            st.integers(0, 50_000), st.integers(0, 5_000), st.integers(0, 5_000), st.integers(0, 7_200)
        ),
        max_size=12,
    )
)
def test_wasted_and_rewritten_tokens_never_exceed_what_was_written(
    rows: list[tuple[int, int, int, int]],
) -> None:
    calls = []
    at = 0
    for read, write_5m, write_1h, gap in rows:
        at += gap
        calls.append(call(read=read, write_5m=write_5m, write_1h=write_1h, at=at))
    cost = session_cost_of(calls=calls, prices=PRICES)
    written = sum(c.tokens.cache_write_5m + c.tokens.cache_write_1h for c in calls)
    assert 0 <= cost.wasted_write_tokens <= written
    assert 0 <= cost.rewritten_tokens <= written


def test_costs_display_in_dollars() -> None:
    assert usd(None) == "—"
    assert usd(Decimal(0)) == "$0"
    assert usd(Decimal("1234.5")) == "$1,234.50"
    assert usd(Decimal("0.055707")) == "$0.0557"


def test_a_cost_below_a_tenth_of_a_cent_reads_as_a_plain_decimal() -> None:
    assert usd(Decimal("0.000081")) == "$0.000081"
    assert usd(Decimal("0.00009712345")) == "$0.000097"
    assert usd(Decimal("0.00000001")) == "$0.00000001"
    assert usd(8.1e-05) == "$0.000081"  # a float too, as a template may hand one
    assert usd(Decimal("0.5")) == "$0.5"
    assert usd(Decimal("0.0009996")) == "$0.001"


@pytest.mark.parametrize(
    ("model", "input_price"),
    [
        ("claude-sonnet-4-20250514", "3"),
        ("claude-sonnet-4-5-20250929", "3"),
        ("claude-opus-4-6", "5"),
        ("claude-opus-4-1-20250805", "15"),
        ("claude-haiku-4-5-20251001", "1"),
        ("claude-3-5-haiku-20241022", "0.8"),
        ("gpt-4.1-2025-04-14", "2"),
        ("gpt-4o-mini", "0.15"),
        ("gpt-5-2025-08-07", "1.25"),
        ("o4-mini", "1.1"),
        ("deepseek-chat", "0.28"),
        ("gemini-2.5-pro", "1.25"),
    ],
)
@pytest.mark.django_db
def test_the_seeded_price_table_prices_the_models_the_dashboard_meets(model: str, input_price: str) -> None:
    prices = [Price.of(row) for row in ModelPrice.objects.all()]
    found = price_match(model=model, prices=prices)
    assert found is not None, model
    assert found.input == Decimal(input_price)


def _session_with_requests() -> Session:
    source = Source.objects.create(name="farm")
    session = Session.objects.create(source=source, external_id="s1", format="anthropic-capture")
    ModelPrice.objects.create(
        pattern="house-model",
        input=Decimal(2),
        output=Decimal(10),
        cache_write_5m=Decimal("2.5"),
        cache_write_1h=Decimal(4),
        cache_read=Decimal("0.2"),
        read_on=T0.date(),
    )
    for ordinal, (read, write, at) in enumerate([(0, 1000, 0), (1000, 500, 30), (1000, 500, 400)]):
        Request.objects.create(
            session=session,
            ordinal=ordinal,
            key=f"r{ordinal}",
            provider="anthropic",
            model="house-model-2026",
            started_at=T0 + timedelta(seconds=at),
            uncached_input_tokens=10,
            cache_read_tokens=read,
            cache_write_5m_tokens=write,
            output_tokens=100,
        )
    session_refresh_summary(session)
    return session


@pytest.mark.django_db
def test_a_stored_session_is_priced_from_its_requests_in_order() -> None:
    session = _session_with_requests()
    cost = session_cost_compute(session=session)
    # inputs 30*2 + reads 2000*0.2 + writes 2000*2.5 + outputs 300*10 = 60 + 400 + 5000 + 3000 micro-dollars
    assert cost.total == Decimal("0.00846")
    # request 1's write (500) is read only after 370 s: expired; request 2's write is never read.
    assert cost.wasted_write_tokens == 1000
    assert cost.rewritten_tokens == 500
    assert sessions_cost_map(session_ids=[session.pk]) == {session.pk: Decimal("0.00846")}


@pytest.mark.django_db
def test_session_pages_and_the_overview_show_costs(viewer_client: Client) -> None:
    session = _session_with_requests()
    listing = viewer_client.get(reverse("dashboard:sessions"))
    assert b"$0.00846" in listing.content
    # One style on every page: three significant figures below a dollar, never four decimals.
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "$0.00846</span>" in page
    assert "$0.0085" not in page
    rollups_rebuild()
    overview = viewer_client.get(reverse("dashboard:overview"))
    assert b"$0.00846" in overview.content


GPT_5_6 = Price("gpt-5.6", Decimal(5), Decimal(30), Decimal("6.25"), Decimal("6.25"), Decimal("0.5"))


def test_gpt_5_6_cache_writes_cost_their_own_price_and_live_thirty_minutes() -> None:
    # OpenAI's prompt-caching guide: GPT-5.6 writes cost 1.25x input, reported as cache_write_tokens,
    # which the normalizer puts in the default write bucket; their ttl defaults to 30 minutes.
    usage = openai_responses_usage(
        {
            "input_tokens": 8_000,
            "output_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 8_000},
        }
    )
    assert usage.cache_write_5m == 8_000
    tokens = Tokens(uncached_input=usage.uncached_input or 0, cache_write_5m=usage.cache_write_5m or 0)
    assert usage_cost(tokens=tokens, price=GPT_5_6) == Decimal("0.05")  # 8000 * 6.25 / 1e6, not 8000 * 5
    model = "gpt-5.6-sol"
    kept = session_cost_of(
        calls=[call(write_5m=8_000, model=model), call(read=8_000, at=20 * 60, model=model)], prices=[GPT_5_6]
    )
    assert kept.wasted_write_tokens == 0  # a Claude 5-minute write would have expired
    lost = session_cost_of(
        calls=[call(write_5m=8_000, model=model), call(read=8_000, at=31 * 60, model=model)], prices=[GPT_5_6]
    )
    assert lost.wasted_write_tokens == 8_000
