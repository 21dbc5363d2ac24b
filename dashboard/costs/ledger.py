"""A session's cost before any price: per model, the sums its cost, wasted writes, re-writes and
re-processed tokens are made of (:class:`ModelTally`), and those sums priced (:func:`ledger_cost`).

Every figure of :class:`~dashboard.costs.pricing.SessionCost` is a sum over calls of tokens times
their model's price, so the sums price a session exactly, at whatever prices hold by then; which
tokens count as wasted, re-written or re-processed is :mod:`dashboard.costs.pricing`'s rule.
:mod:`dashboard.costs.session_costs` keeps each session's ledger in the database.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields
from decimal import Decimal

from dashboard.costs.pricing import (
    MILLION,
    ZERO,
    Call,
    Price,
    SessionCost,
    Tokens,
    price_match,
    prices_load,
    reprocessed_tokens,
    rewritten_writes,
    session_calls_load,
    unread_writes,
    usage_cost,
)
from dashboard.models import Session


@dataclass(slots=True)
class ModelTally:
    """One model's share of a session's cost before any price: its calls' usage summed by bucket,
    and of their writes, those never read back and those written again, by lifetime.

    Every figure of :class:`SessionCost` is a sum over calls of tokens times their model's price,
    so these sums price a session exactly, whatever the price table says by then.
    """

    requests: int = 0
    uncached_input: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0
    unread_1h: int = 0
    unread_5m: int = 0
    again_1h: int = 0
    again_5m: int = 0
    reprocessed: int = 0

    def as_list(self) -> list[int]:
        return [getattr(self, field.name) for field in fields(self)]

    @classmethod
    def of_list(cls, values: Sequence[int]) -> ModelTally:
        return cls(*values)

    def usage(self) -> Tokens:
        return Tokens(
            self.uncached_input, self.cache_read, self.cache_write_5m, self.cache_write_1h, self.output
        )


CostLedger = dict[str, ModelTally]
"""A session's :class:`ModelTally` by model name."""


def cost_ledger(calls: Sequence[Call]) -> CostLedger:
    """The price-free sums a session's cost is made of, from its calls in request order: a write
    is read back (or written again) only by the next call of its own lineage."""
    lineages: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        lineages[call.lineage].append(call)
    ledger: CostLedger = {}
    for chain in lineages.values():
        for index, call in enumerate(chain):
            tally = ledger.get(call.model)
            if tally is None:  # not setdefault: that would build a tally for every call
                tally = ledger[call.model] = ModelTally()
            tokens = call.tokens
            tally.requests += 1
            tally.uncached_input += tokens.uncached_input
            tally.cache_read += tokens.cache_read
            tally.cache_write_5m += tokens.cache_write_5m
            tally.cache_write_1h += tokens.cache_write_1h
            tally.output += tokens.output
            lost_1h, lost_5m = unread_writes(call, chain[index + 1] if index + 1 < len(chain) else None)
            tally.unread_1h += lost_1h
            tally.unread_5m += lost_5m
            previous = chain[index - 1].tokens if index else None
            again_1h, again_5m = rewritten_writes(previous, tokens)
            tally.again_1h += again_1h
            tally.again_5m += again_5m
            tally.reprocessed += reprocessed_tokens(previous, tokens)
    return ledger


def ledger_cost(ledger: CostLedger, prices: Sequence[Price]) -> SessionCost:
    """A session's cost, wasted writes and re-writes at ``prices``. Tokens are counted for every
    model; a model no price matches adds its requests to the unpriced ones and nothing to any cost,
    and a session whose every request is unpriced has no costs at all rather than costs of $0. A
    session without a request cost nothing: $0."""
    total = rewritten_cost = wasted_write_cost = ZERO
    priced = unpriced_count = 0
    unpriced: set[str] = set()
    for model, tally in ledger.items():
        price = price_match(model=model, prices=prices)
        if price is None:
            unpriced.add(model or "(no model)")
            unpriced_count += tally.requests
            continue
        priced += tally.requests
        total += usage_cost(tokens=tally.usage(), price=price)
        wasted_write_cost += _write_cost(tally.unread_1h, tally.unread_5m, price)
        rewritten_cost += _write_cost(tally.again_1h, tally.again_5m, price)
    tallies = ledger.values()
    known = bool(priced or not unpriced_count)  # no request at all: nothing to price, nothing spent
    return SessionCost(
        total=total if known else None,
        priced_requests=priced,
        unpriced_requests=unpriced_count,
        unpriced_models=tuple(sorted(unpriced)),
        rewritten_tokens=sum(tally.again_1h + tally.again_5m for tally in tallies),
        rewritten_cost=rewritten_cost if known else None,
        wasted_write_tokens=sum(tally.unread_1h + tally.unread_5m for tally in tallies),
        wasted_write_cost=wasted_write_cost if known else None,
        reprocessed_tokens=sum(tally.reprocessed for tally in tallies),
    )


def _write_cost(tokens_1h: int, tokens_5m: int, price: Price) -> Decimal:
    return (tokens_1h * price.cache_write_1h + tokens_5m * price.cache_write_5m) / MILLION


def session_cost_of(*, calls: Sequence[Call], prices: Sequence[Price]) -> SessionCost:
    """The cost, wasted writes and re-writes of a session's calls, given in request order."""
    return ledger_cost(cost_ledger(calls), prices)


def session_cost_compute(*, session: Session) -> SessionCost:
    """The cost figures of one stored session, from its requests in order."""
    return sessions_cost_compute(session_ids=[session.pk])[session.pk]


def sessions_cost_compute(*, session_ids: Sequence[int]) -> dict[int, SessionCost]:
    """The cost figures of each listed session, from its requests in order.

    Two queries however many sessions are listed (their requests, the prices), so a page that
    shows a cost per row does not query per row.
    """
    calls = session_calls_load(session_ids=session_ids)
    if not calls:
        return {}
    prices = prices_load()
    return {pk: session_cost_of(calls=session_calls, prices=prices) for pk, session_calls in calls.items()}
