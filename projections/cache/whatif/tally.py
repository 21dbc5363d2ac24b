"""A world's replayed usage, summed by the request's model, client release and recorded miss cause.

Summing tokens rather than dollars keeps a replay free of prices: every figure of a scenario is a
sum of tokens times their model's rate, so the tally prices exactly at whatever prices are given,
and a page can rank models, releases and causes from the groups without replaying anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

from projections.money import ZERO, Price, Tokens, price_match, usage_cost


class GroupKey(NamedTuple):
    """What a group of requests shares."""

    model: str
    client_version: str
    cause: str
    """The miss label of the request as recorded, up to its position (``prefix-changed@system``,
    ``ttl-expired``, ...); empty where the recorded request did not miss or was not predicted."""


@dataclass(slots=True)
class Group:
    """The requests of one :class:`GroupKey` in one world."""

    requests: int = 0
    touched: int = 0
    """Requests the world sent otherwise than recorded."""
    tokens: Tokens = field(default_factory=Tokens)


class UnpricedModelError(LookupError):
    """Requests whose model no price matches: their cost, and so any saving, is unknown."""

    def __init__(self, models: list[str]) -> None:
        self.models = models
        names = ", ".join(repr(model) for model in models)
        super().__init__(f"no price for model {names}: add it to the price table")


@dataclass(slots=True)
class Tally:
    """A world's requests in groups (see the module)."""

    groups: dict[GroupKey, Group] = field(default_factory=dict)
    by_request: dict[str, Tokens] = field(default_factory=dict)
    """Each request's usage in this world, by the request's key, for a request page to show."""

    def add(self, key: GroupKey, tokens: Tokens, *, touched: bool, request: str = "") -> None:
        """Count one request of ``key`` (``request``, its own key) with the usage the world
        predicts for it."""
        if request:
            self.by_request[request] = tokens
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group()
        group.requests += 1
        group.touched += touched
        group.tokens = group.tokens.plus(tokens)

    @property
    def requests(self) -> int:
        """Every request counted."""
        return sum(group.requests for group in self.groups.values())

    @property
    def touched(self) -> int:
        """Every request the world changed."""
        return sum(group.touched for group in self.groups.values())

    def tokens(self) -> Tokens:
        """Every request's usage summed by bucket."""
        total = Tokens()
        for group in self.groups.values():
            total = total.plus(group.tokens)
        return total

    def cost(self, prices: list[Price]) -> Decimal:
        """What every request costs at ``prices``; raises :class:`UnpricedModelError` naming the
        models no price matches."""
        return sum((group_cost(key, group, prices) for key, group in self.groups.items()), ZERO)


def group_cost(key: GroupKey, group: Group, prices: list[Price]) -> Decimal:
    """What a group's usage costs at its model's price."""
    price = price_match(model=key.model, prices=prices)
    if price is None:
        raise UnpricedModelError([key.model])
    return usage_cost(tokens=group.tokens, price=price)
