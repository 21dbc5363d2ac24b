"""What tokens cost: prices by model from the price table, per request, per session and per fleet.

The vocabulary itself (a request's cost, its miss cost, a scenario's saving, how a model finds its
price) is the engine's, :mod:`projections.money`; this module reads the price table and sums stored
requests with it.

A model's price is the row whose pattern matches its name and is the longest (``claude-opus-4-1``
beats ``claude-opus-4``). Provider spellings are reduced first: an OpenRouter ``vendor/`` prefix and
a Bedrock ``<region>.anthropic.`` prefix are dropped, case is ignored.

Wasted writes, per session (an approximation from reported usage alone, DESIGN §7): requests are
taken in order within each lineage (the analysis's once it ran, else the importer's role: the
:func:`~dashboard.models.requests.current_lineage` the pages and charts read). A request that wrote
``w1h`` 1-hour and ``w5m`` 5-minute tokens after reading ``r`` laid the prefix out as
``[r, r + w1h)`` (1 hour) then ``[r + w1h, r + w1h + w5m)`` (5 minutes), since 1-hour breakpoints
must precede 5-minute ones. The next request of the lineage reads ``r'``; it covers ``r' - r`` of those
written tokens, 1-hour part first, but a part only counts as read while its entry lives: the 5-minute part
if the next request starts within 5 minutes, the 1-hour part within an hour (an unknown start time
counts as within). The default bucket lives as long as the model's default lifetime in the provider
rules: 5 minutes on Claude, 30 minutes for the writes GPT-5.6 and later report as
``cache_write_tokens``. Written tokens not covered are wasted, and so is every write of a lineage's
last request, which nothing reads.

Re-written tokens: a request that reads less than the previous request of its lineage had cached
(``r_prev + w_prev``, :func:`cached_shortfall`) and writes again writes up to that shortfall a second
time. Not to be taken for the requests list's re-processed tokens
(:mod:`dashboard.analysis.request_figures`): those are the whole shortfall a request sent again,
written or not, where a wasted write is a write that nothing read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

from django.db.models import Sum

from dashboard.models import ModelPrice, Request
from dashboard.models.requests import current_lineage
from projections.money import MILLION as MILLION
from projections.money import ZERO as ZERO
from projections.money import Price as Price
from projections.money import Tokens as Tokens
from projections.money import cached_shortfall as cached_shortfall
from projections.money import normalize_model as normalize_model
from projections.money import price_match as price_match
from projections.money import reprocessed_tokens as reprocessed_tokens
from projections.money import usage_cost as usage_cost
from projections.providers import rules as provider_rules
from projections.providers.mechanics import TTL_SECONDS

COST_PLACES = Decimal("0.00000001")
"""The places a stored cost keeps: the columns that hold one have eight decimals."""
TTL_5M = timedelta(seconds=TTL_SECONDS["5m"])
TTL_1H = timedelta(seconds=TTL_SECONDS["1h"])


def row_tokens(row: Request) -> Tokens:
    """A stored request's usage in exclusive buckets, an unreported one as 0."""
    return Tokens(
        row.uncached_input_tokens or 0,
        row.cache_read_tokens or 0,
        row.cache_write_5m_tokens or 0,
        row.cache_write_1h_tokens or 0,
        row.output_tokens or 0,
    )


class Call(NamedTuple):
    """One request as the session cost needs it."""

    lineage: str
    model: str
    started_at: datetime | None
    tokens: Tokens


def stored_calls(rows: Sequence[Request]) -> list[Call]:
    """Stored requests, given in order, as the cost needs them (their lineage as the pages read it);
    :func:`session_calls_load` reads the same from the database."""
    return [Call(row.current_lineage, row.model, row.started_at, row_tokens(row)) for row in rows]


@dataclass(frozen=True, slots=True)
class SessionCost:
    """A session's cost and the part of it its cache wasted."""

    total: Decimal | None
    """``None`` when the session has requests and none of them has a price; $0 without a request."""
    priced_requests: int
    unpriced_requests: int
    unpriced_models: tuple[str, ...]
    rewritten_tokens: int
    """Written again after the previous request of the lineage had cached them; every model's."""
    rewritten_cost: Decimal | None
    """The priced models' share; ``None`` when no request has a price, as for :attr:`total`."""
    wasted_write_tokens: int
    """Written and never read back: expired before the next request, or the lineage's last writes;
    every model's."""
    wasted_write_cost: Decimal | None
    """The priced models' share; ``None`` when no request has a price."""
    reprocessed_tokens: int
    """Cached by a request and not read by the next of its lineage, written again or not: the sum of
    the requests list's figure. Counted for every request, priced or not."""


def prices_load() -> list[Price]:
    """Every row of the price table."""
    return [Price.of(row) for row in ModelPrice.objects.all()]


@lru_cache(maxsize=256)
def default_write_lifetime(model: str) -> timedelta:
    """How long a write of the default bucket lives for ``model``: its scheme's default lifetime in
    the provider rules, 5 minutes for a model the rules do not know (the Anthropic default)."""
    for rule in provider_rules.MODEL_RULES:
        if rule.matches(model) and rule.mechanics.writes_per_request:
            mechanics = rule.mechanics
            return timedelta(seconds=mechanics.lifetimes[mechanics.default_lifetime])
    return TTL_5M


def unread_writes(call: Call, following: Call | None) -> tuple[int, int]:
    """The 1-hour and default-lifetime written tokens of ``call`` that ``following`` did not read back."""
    written_1h, written_5m = call.tokens.cache_write_1h, call.tokens.cache_write_5m
    if following is None:
        return written_1h, written_5m
    gap = (
        following.started_at - call.started_at
        if following.started_at is not None and call.started_at is not None
        else None
    )
    covered = max(0, following.tokens.cache_read - call.tokens.cache_read)
    read_1h = min(written_1h, covered) if gap is None or gap <= TTL_1H else 0
    lifetime = default_write_lifetime(call.model) if call.model else TTL_5M
    read_5m = min(written_5m, max(0, covered - written_1h)) if gap is None or gap <= lifetime else 0
    return written_1h - read_1h, written_5m - read_5m


def rewritten_writes(previous: Tokens | None, current: Tokens) -> tuple[int, int]:
    """The 1-hour and 5-minute tokens ``current`` wrote that ``previous`` had already cached: the
    session cost's re-written tokens, and the overview's ranking of them, request by request."""
    if previous is None:
        return 0, 0
    shortfall = cached_shortfall(previous, current)
    if shortfall == 0:
        return 0, 0
    again_1h = min(current.cache_write_1h, shortfall)
    again_5m = min(current.cache_write_5m, shortfall - again_1h)
    return again_1h, again_5m


def session_calls_load(*, session_ids: Sequence[int]) -> dict[int, list[Call]]:
    """Each listed session's requests in order as the cost needs them, each with the lineage every
    page reads (:func:`~dashboard.models.requests.current_lineage`); one query."""
    calls: dict[int, list[Call]] = {pk: [] for pk in session_ids}
    if not calls:
        return calls
    rows = (
        Request.objects.filter(session_id__in=calls)
        .order_by("session_id", "ordinal", "id")
        .values_list(
            "session_id",
            current_lineage(),
            "model",
            "started_at",
            "uncached_input_tokens",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "output_tokens",
        )
    )
    # Fetched at once, not through .iterator(): outside a transaction that is a WITH HOLD cursor on
    # PostgreSQL, which copies the rows server-side and costs two more round trips per page.
    for session_id, lineage, model, started, uncached, read, write_5m, write_1h, output in rows:
        tokens = Tokens(uncached or 0, read or 0, write_5m or 0, write_1h or 0, output or 0)
        calls[session_id].append(Call(lineage, model, started, tokens))
    return calls


_BUCKET_SUMS = {
    "uncached": Sum("uncached_input_tokens"),
    "read": Sum("cache_read_tokens"),
    "write_5m": Sum("cache_write_5m_tokens"),
    "write_1h": Sum("cache_write_1h_tokens"),
    "output": Sum("output_tokens"),
}


def _grouped_costs(group: str, rows: Iterable[dict[str, Any]], prices: Sequence[Price]) -> dict[int, Decimal]:
    costs: dict[int, Decimal] = {}
    for row in rows:
        price = price_match(model=row["model"], prices=prices)
        if price is None:
            continue
        tokens = Tokens(
            uncached_input=row["uncached"] or 0,
            cache_read=row["read"] or 0,
            cache_write_5m=row["write_5m"] or 0,
            cache_write_1h=row["write_1h"] or 0,
            output=row["output"] or 0,
        )
        costs[row[group]] = costs.get(row[group], ZERO) + usage_cost(tokens=tokens, price=price)
    return costs


def sessions_cost_map(*, session_ids: Sequence[int]) -> dict[int, Decimal]:
    """The cost of each listed session that has at least one priced request, in one query."""
    if not session_ids:
        return {}
    rows = (
        Request.objects.filter(session_id__in=session_ids)
        .values("session_id", "model")
        .annotate(**_BUCKET_SUMS)
        .order_by()
    )
    return _grouped_costs("session_id", rows, prices_load())
