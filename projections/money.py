"""What tokens cost: one money vocabulary for every page, export, alert and what-if (DESIGN §6.4).

Three figures, each defined once here and nowhere else:

- **cost** of a request (:func:`usage_cost`): uncached input, cache reads, 5-minute and 1-hour
  writes and output, each at its own rate of the model's price;
- **miss cost** of a request (:func:`miss_cost`): what it paid, beyond the read price, for the
  tokens the previous request of its lineage had already cached and it could not read. Those
  tokens sit right after what it did read, so they were billed at the rate of the bucket they fell
  in, in prompt order: 1-hour writes first (a 1-hour breakpoint must precede a 5-minute one), then
  5-minute writes, then uncached input (:func:`beyond_read_cost`). On Anthropic a missed 5-minute
  write costs 1.25x the input price less the 0.1x read, a 1-hour write 2x less 0.1x. A cold start
  (nothing cached before it) has no miss: its write is the price of caching;
- **saving** of a what-if scenario (:func:`saving`): the session's cost as recorded less its cost
  under the scenario, both replayed by the same provider rules, so the rules' own error cancels.

Prices are plain data (:class:`Price`, USD per million tokens of each bucket): the dashboard reads
them from its price table, a test or a benchmark writes them down. A model's price is the row whose
pattern matches its name and is the longest (:func:`price_match`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from operator import add
from typing import NamedTuple, Protocol

MILLION = Decimal(1_000_000)
ZERO = Decimal(0)

COST_MEANING = (
    "What a request's usage costs at its model's list price: uncached input, cache reads, 5-minute "
    "and 1-hour cache writes and output, each at its own rate."
)
MISS_COST_MEANING = (
    "What a request paid beyond the cache-read price for tokens the previous request of its lineage "
    "had already cached and it could not read, at the rate they were billed at: a 5-minute write "
    "(1.25x input on Anthropic), a 1-hour write (2x) or plain input. A cold start has no miss cost."
)
SAVING_MEANING = (
    "What a change would save: the session's cost as recorded less its cost with the change, both "
    "replayed by the same provider rules, so the rules' own error cancels out."
)
"""The three figures in one sentence each, as the glossary and the what-if output quote them."""

_VENDOR = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")


class PriceRow(Protocol):
    """Anything holding a model's prices by bucket, such as a row of the dashboard's price table."""

    @property
    def pattern(self) -> str: ...
    @property
    def input(self) -> Decimal: ...
    @property
    def output(self) -> Decimal: ...
    @property
    def cache_write_5m(self) -> Decimal: ...
    @property
    def cache_write_1h(self) -> Decimal: ...
    @property
    def cache_read(self) -> Decimal: ...


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens of each bucket, for the models ``pattern`` names."""

    pattern: str
    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal

    @classmethod
    def of(cls, row: PriceRow) -> Price:
        """The prices of a price-table row."""
        return cls(
            pattern=row.pattern,
            input=row.input,
            output=row.output,
            cache_write_5m=row.cache_write_5m,
            cache_write_1h=row.cache_write_1h,
            cache_read=row.cache_read,
        )


class Tokens(NamedTuple):
    """Usage in exclusive buckets; an unreported bucket is 0 here, since it costs nothing.

    A named tuple rather than a frozen dataclass: one is built for every stored request a cost is
    figured from, and a tuple is built in a third of the time.
    """

    uncached_input: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0

    @property
    def prompt(self) -> int:
        """Every prompt token: uncached, read and written."""
        return self.uncached_input + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def written(self) -> int:
        """Both write buckets together."""
        return self.cache_write_5m + self.cache_write_1h

    def plus(self, other: Tokens) -> Tokens:
        """The two usages summed bucket by bucket."""
        return Tokens(*map(add, self, other))


def normalize_model(model: str) -> str:
    """A model name as patterns see it: lower case, without a router or Bedrock vendor prefix."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return _VENDOR.sub("", name)


@lru_cache(maxsize=512)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    body = ".*".join(re.escape(part) for part in pattern.lower().split("*"))
    # The name must end where the pattern does or go on past a separator: gpt-5 is not gpt-5.4.
    return re.compile(body + r"(?:$|[^a-z0-9.])")


def price_match(*, model: str, prices: Iterable[Price]) -> Price | None:
    """The price whose pattern matches ``model`` and is longest, or ``None``."""
    name = normalize_model(model)
    if not name:
        return None
    best: Price | None = None
    for price in prices:
        if _pattern_regex(price.pattern).match(name):
            rank = (len(price.pattern.replace("*", "")), len(price.pattern))
            if best is None or rank > (len(best.pattern.replace("*", "")), len(best.pattern)):
                best = price
    return best


def usage_cost(*, tokens: Tokens, price: Price) -> Decimal:
    """The **cost** of one usage in USD, every bucket at its own rate."""
    micro = (
        tokens.uncached_input * price.input
        + tokens.cache_read * price.cache_read
        + tokens.cache_write_5m * price.cache_write_5m
        + tokens.cache_write_1h * price.cache_write_1h
        + tokens.output * price.output
    )
    return micro / MILLION


def cached_shortfall(previous: Tokens, current: Tokens) -> int:
    """Of the prefix ``previous`` left cached (what it read plus what it wrote), the tokens ``current``
    did not read: it sent them through the model again, as uncached input or as writes."""
    cached = previous.cache_read + previous.cache_write_1h + previous.cache_write_5m
    return max(0, cached - current.cache_read)


def reprocessed_tokens(previous: Tokens | None, current: Tokens) -> int:
    """The tokens ``previous`` left cached that ``current`` processed again, at most what it did not
    read of its own prompt; 0 for a lineage's first request (a cold start)."""
    if previous is None:
        return 0
    not_read = current.uncached_input + current.cache_write_5m + current.cache_write_1h
    return min(cached_shortfall(previous, current), not_read)


def beyond_read_split(tokens: int, usage: Tokens) -> tuple[int, int, int]:
    """Where ``tokens`` processed right after ``usage``'s read were billed: (1-hour writes, 5-minute
    writes, uncached input), filled in prompt order, the writes at most what ``usage`` reports.

    Whatever the writes do not hold counts as uncached input, even past what ``usage`` reports: a
    stake the analysis names beyond the reported prompt is priced at the input rate, as the provider
    would bill it, rather than dropped.
    """
    in_1h = min(tokens, usage.cache_write_1h)
    in_5m = min(tokens - in_1h, usage.cache_write_5m)
    return in_1h, in_5m, tokens - in_1h - in_5m


def beyond_read_cost(tokens: int, usage: Tokens, price: Price) -> Decimal:
    """What ``tokens`` that ``usage`` processed after its read cost beyond being read from the cache:
    each at the rate of the bucket it was billed in (:func:`beyond_read_split`) less the read rate."""
    in_1h, in_5m, plain = beyond_read_split(max(0, tokens), usage)
    read = price.cache_read
    micro = (
        in_1h * max(ZERO, price.cache_write_1h - read)
        + in_5m * max(ZERO, price.cache_write_5m - read)
        + plain * max(ZERO, price.input - read)
    )
    return micro / MILLION


def miss_cost(previous: Tokens | None, current: Tokens, price: Price) -> Decimal:
    """The **miss cost** of ``current``: its :func:`reprocessed_tokens` after ``previous`` (the
    previous request of its lineage, ``None`` for a cold start) at their billed rates less the read
    rate."""
    return beyond_read_cost(reprocessed_tokens(previous, current), current, price)


def saving(recorded: Decimal, scenario: Decimal) -> Decimal:
    """The **saving** of a scenario: the cost as recorded less the cost under the scenario, both by
    the same rules; negative when the scenario costs more."""
    return recorded - scenario
