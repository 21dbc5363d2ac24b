"""The price table a deployment starts with: a price for every model family the provider rules know
(but those with no published price, named here), agreeing with the rules' write and read multipliers."""

from __future__ import annotations

from decimal import Decimal
from importlib import import_module

import pytest

from dashboard.costs.pricing import Tokens, price_match, prices_load, usage_cost
from projections.providers.rules import MODEL_RULES, ModelRule
from projections.providers.rules import family_of as rules_family_of
from tests.conftest import PRICE_SEEDS

UNPUBLISHED = {
    "Claude Mythos Preview": "offered to invited organisations; the pricing page lists no figure",
    "GPT-5.6 and later": "the stored pricing pages hold no GPT-5.6 figure yet",
}
"""Families left without a seeded price, and why; their sessions say "no price for MODEL"."""
CENT = Decimal("0.0125")
"""How far a listed price may sit from the rule's multiple of the input price: Anthropic rounds
its cache prices to the cent (Haiku 3: 5-minute writes $0.30, not 1.25 x $0.25)."""


def seeded_rows() -> list[tuple[str, ...]]:
    return [row for name in PRICE_SEEDS for row in import_module(f"dashboard.migrations.{name}").SEED]


def family_of(pattern: str) -> ModelRule:
    """The rule that judges a model named like ``pattern``: the first that matches, as the engine reads."""
    rule = rules_family_of(pattern)
    assert rule is not None, pattern
    return rule


def catch_all(rule: ModelRule) -> bool:
    return rule.family.startswith("Other ")


def test_every_family_the_rules_know_has_a_seeded_price_or_is_named_as_unpublished() -> None:
    priced = {family_of(row[0]).family for row in seeded_rows()}

    missing = [rule.family for rule in MODEL_RULES if not catch_all(rule) and rule.family not in priced]

    assert sorted(missing) == sorted(UNPUBLISHED)


def test_no_family_named_as_unpublished_has_a_price_after_all() -> None:
    assert not {family_of(row[0]).family for row in seeded_rows()} & set(UNPUBLISHED)


@pytest.mark.parametrize("row", seeded_rows(), ids=lambda row: row[0])
def test_each_seeded_price_agrees_with_its_family_s_write_and_read_multipliers(row: tuple[str, ...]) -> None:
    pattern, _provider, price_in, write_5m, write_1h, read, _out, source = row
    rule = family_of(pattern)
    base = Decimal(price_in)
    # A provider without a write fee bills a write as uncached input.
    writes = rule.write_multipliers or {"5m": 1.0, "1h": 1.0}
    expected_5m = base * Decimal(str(writes["5m"]))
    expected_1h = base * Decimal(str(writes["1h"]))

    assert abs(Decimal(write_5m) - expected_5m) <= CENT, pattern
    assert abs(Decimal(write_1h) - expected_1h) <= CENT, pattern
    if rule.read_multiplier is not None:
        assert abs(Decimal(read) - base * Decimal(str(rule.read_multiplier))) <= CENT, pattern
    assert source.startswith("https://"), pattern


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model", ["deepseek-v4-flash", "deepseek-v4-pro", "claude-opus-5-5", "claude-sonnet-5-5"]
)
def test_a_model_the_rules_know_is_priced_by_the_seeded_table(model: str) -> None:
    price = price_match(model=model, prices=prices_load())

    assert price is not None
    assert price.pattern == model
    assert usage_cost(tokens=Tokens(uncached_input=1_000_000), price=price) == price.input
