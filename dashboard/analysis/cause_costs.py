"""What two known causes cost, priced from the stored analyses: compactions (per session) and
Claude Code's attribution block (per session and per fleet, by endpoint).

The engine states the tokens (``data["compaction"]`` and ``data["attribution"]`` of each request's
analysis, see :mod:`projections.cache.predict.compaction` and :mod:`projections.cache.attribution`); this
module prices them with the price table:

- a compaction costs what its requests cost (the summarising call and the restart, as reported);
  a summarising call that could not read what the main thread had cached would have saved its
  re-written tokens x (write price - read price), and its other re-processed tokens x (input price
  - read price), had it read them;
- the attribution block costs its re-written tokens x the write price, where the provider's reads
  show it stopped the read; where they show the endpoint read on past a changed block, the
  endpoint ignores it and it cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Q, QuerySet

from dashboard.costs.pricing import MILLION, Price, price_match, prices_load
from dashboard.models import RequestAnalysis

ATTRIBUTION_CAUSE = "attribution-changed"
COMPACTION_ROLES = ("call", "restart")


@dataclass(frozen=True, slots=True)
class CompactionCosts:
    """A session's compactions: how many, what their requests cost, what keeping the main thread's
    prefix in the summarising calls would have saved."""

    count: int
    calls: int
    restarts: int
    cost: Decimal | None
    """What the compactions' requests cost as reported; ``None`` when none is priced."""
    reprocessed_tokens: int
    """Tokens the summarising calls sent again that the main thread had cached."""
    saving: Decimal | None
    """What reading those at the read price would have saved; ``None`` without a price."""


@dataclass(slots=True)
class AttributionEndpoint:
    """What Claude Code's attribution block did at one endpoint."""

    endpoint: str
    changed: int = 0
    """Requests whose block differed from the one a readable prefix was written with."""
    ignored: int = 0
    """Of those, the ones the provider read on past the block for: the endpoint ignores it."""
    reprocessed_tokens: int = 0
    rewritten_tokens: int = 0
    cost: Decimal = Decimal(0)
    """Re-written tokens x the write price."""
    unpriced: set[str] = field(default_factory=set)
    """Models without a price whose tokens are left out of ``cost``."""

    @property
    def missed(self) -> int:
        """Requests the block kept from reading."""
        return self.changed - self.ignored


def session_compactions(*, session_id: int, prices: Sequence[Price] | None = None) -> CompactionCosts:
    """The compactions of one session, from its stored analyses (see the module's docstring)."""
    rows = RequestAnalysis.objects.filter(
        Q(data__compaction__role__in=COMPACTION_ROLES), session_id=session_id
    ).values_list("cost", "data__compaction", "request__model")
    prices = prices_load() if prices is None else prices
    calls = restarts = reprocessed = 0
    cost: Decimal | None = None
    saving: Decimal | None = None
    for row_cost, note, model in rows:
        if not isinstance(note, Mapping):
            continue
        if row_cost is not None:
            cost = (cost or Decimal(0)) + row_cost
        if note.get("role") == "restart":
            restarts += 1
            continue
        calls += 1
        tokens, rewritten = _count(note.get("reprocessed")), _count(note.get("rewritten"))
        reprocessed += tokens
        price = price_match(model=model, prices=prices)
        if tokens and price is not None:
            saving = (saving or Decimal(0)) + _reading_saves(tokens, rewritten, price)
    # A summarising call and its restart are one compaction; either alone is one too.
    return CompactionCosts(max(calls, restarts), calls, restarts, cost, reprocessed, saving)


def attribution_by_endpoint(
    analyses: QuerySet[RequestAnalysis], prices: Sequence[Price] | None = None
) -> list[AttributionEndpoint]:
    """What the attribution block did, per endpoint, over ``analyses`` (a session's or the fleet's),
    the costliest endpoint first. Read off the indexed ``cause`` column: few rows."""
    rows = analyses.filter(cause=ATTRIBUTION_CAUSE).values_list(
        "request__endpoint", "request__model", "data__attribution"
    )
    return priced_endpoints(rows, prices_load() if prices is None else prices)


def priced_endpoints(
    rows: Iterable[tuple[str, str, Any]], prices: Sequence[Price]
) -> list[AttributionEndpoint]:
    """(endpoint, model, the analysis's ``attribution``) rows summed and priced per endpoint."""
    by_endpoint: dict[str, AttributionEndpoint] = {}
    matched: dict[str, Price | None] = {}
    for endpoint, model, said in rows:
        if not isinstance(said, Mapping):
            continue  # the block changed but no earlier write showed what it kept from being read
        place = by_endpoint.setdefault(endpoint or "", AttributionEndpoint(endpoint or ""))
        place.changed += 1
        if said.get("ignored"):
            place.ignored += 1
            continue
        rewritten = _count(said.get("rewritten"))
        place.reprocessed_tokens += _count(said.get("reprocessed"))
        place.rewritten_tokens += rewritten
        if model not in matched:
            matched[model] = price_match(model=model, prices=prices)
        price = matched[model]
        if price is None:
            place.unpriced.add(model)
        else:
            place.cost += rewritten * price.cache_write_5m / MILLION
    return sorted(by_endpoint.values(), key=lambda e: (-e.cost, -e.rewritten_tokens, e.endpoint))


@dataclass(frozen=True, slots=True)
class RequestCauseCosts:
    """What one request's compaction note and attribution figures come to in USD."""

    compaction_saving: Decimal | None = None
    """What a summarising call would have saved by reading what the main thread had cached."""
    compaction_reading: Decimal | None = None
    """What reading those tokens would have cost, at the read price."""
    attribution_cost: Decimal | None = None
    """What re-writing the prefix the attribution block kept from being read cost."""


def request_cause_costs(*, data: Mapping[str, Any], model: str) -> RequestCauseCosts:
    """The prices of one request's ``data["compaction"]`` and ``data["attribution"]``."""
    note, said = data.get("compaction"), data.get("attribution")
    if not isinstance(note, Mapping) and not isinstance(said, Mapping):
        return RequestCauseCosts()
    price = price_match(model=model, prices=prices_load())
    if price is None:
        return RequestCauseCosts()
    saving = reading = None
    if isinstance(note, Mapping) and _count(note.get("reprocessed")):
        tokens, rewritten = _count(note.get("reprocessed")), _count(note.get("rewritten"))
        saving = _reading_saves(tokens, rewritten, price)
        reading = tokens * price.cache_read / MILLION
    cost = None
    if isinstance(said, Mapping) and not said.get("ignored"):
        cost = _count(said.get("rewritten")) * price.cache_write_5m / MILLION
    return RequestCauseCosts(saving, reading, cost)


def _reading_saves(reprocessed: int, rewritten: int, price: Price) -> Decimal:
    """What reading ``reprocessed`` tokens saves over writing ``rewritten`` of them and sending the
    rest as uncached input."""
    saved = rewritten * (price.cache_write_5m - price.cache_read)
    return (saved + (reprocessed - rewritten) * (price.input - price.cache_read)) / MILLION


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
