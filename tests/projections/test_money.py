"""The money vocabulary, checked against the provider's price page figures worked by hand."""

from __future__ import annotations

from decimal import Decimal

from projections.money import (
    Price,
    Tokens,
    beyond_read_cost,
    miss_cost,
    price_match,
    saving,
    usage_cost,
)

# Claude Opus 4.5 list prices per million tokens: $5 input, $6.25 5-minute write, $10 1-hour write,
# $0.50 read, $25 output (platform.claude.com/docs/en/about-claude/pricing).
OPUS = Price("claude-opus-4-5", Decimal(5), Decimal(25), Decimal("6.25"), Decimal(10), Decimal("0.5"))


def test_a_request_costs_each_bucket_at_its_own_rate() -> None:
    tokens = Tokens(
        uncached_input=1_000, cache_read=100_000, cache_write_5m=2_000, cache_write_1h=3_000, output=500
    )
    # 1,000 x 5 + 100,000 x 0.5 + 2,000 x 6.25 + 3,000 x 10 + 500 x 25 = 110,000 micro-dollars
    assert usage_cost(tokens=tokens, price=OPUS) == Decimal("0.11")


def test_a_missed_five_minute_write_costs_the_write_rate_less_the_read_rate() -> None:
    previous = Tokens(cache_read=0, cache_write_5m=76_800)
    current = Tokens(cache_read=0, cache_write_5m=77_300)  # the entry expired: all written again
    # 76,800 x (6.25 - 0.50) = 441,600 micro-dollars, not 76,800 x (5 - 0.50) = $0.3456
    assert miss_cost(previous, current, OPUS) == Decimal("0.4416")


def test_a_missed_one_hour_write_costs_twice_the_input_rate_less_the_read_rate() -> None:
    previous = Tokens(cache_read=10_000, cache_write_1h=1_000)
    current = Tokens(cache_read=0, cache_write_1h=11_500)
    assert miss_cost(previous, current, OPUS) == Decimal(11_000) * Decimal("9.5") / 1_000_000


def test_missed_tokens_fill_the_one_hour_writes_then_the_five_minute_ones_then_plain_input() -> None:
    current = Tokens(uncached_input=400, cache_read=0, cache_write_5m=300, cache_write_1h=200)
    # 200 x 9.5 + 300 x 5.75 + 100 x 4.5 = 4,075 micro-dollars
    assert beyond_read_cost(600, current, OPUS) == Decimal("0.004075")


def test_a_cold_start_and_a_full_hit_cost_no_miss() -> None:
    assert miss_cost(None, Tokens(cache_write_5m=50_000), OPUS) == 0
    warm = Tokens(cache_read=50_000, cache_write_5m=800)
    assert miss_cost(Tokens(cache_read=49_000, cache_write_5m=1_000), warm, OPUS) == 0


def test_a_saving_is_the_recorded_cost_less_the_scenario_cost() -> None:
    assert saving(Decimal("0.48"), Decimal("0.12")) == Decimal("0.36")
    assert saving(Decimal("0.48"), Decimal("0.75")) < 0


def test_the_longest_matching_pattern_prices_a_model() -> None:
    prices = [Price("claude-opus-4", *[Decimal(1)] * 5), OPUS]
    assert price_match(model="us.anthropic.claude-opus-4-5-20251101-v1:0", prices=prices) is OPUS
    assert price_match(model="claude-opus-45", prices=prices) is None
