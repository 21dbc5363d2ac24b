"""What a warning puts at stake: the prompt tokens whose billing it questions and what they cost.

One rule per kind, from the request's analysis figures and reported usage:

- ``unexplained-miss``: the read the bytes allowed and the provider did not give
  (predicted read - reported read);
- ``over-credit``: what the client counts as cached beyond what the wire allows
  (credited - wire allows);
- ``model-error``: how far the reported read is from the predicted one, either way;
- ``provider-disagrees``: the tokens the provider itself says it missed, when it says;
- any other kind that concerns a request (``render-mismatch``, ``marker-limit``, …): the request's
  prompt tokens the cache did not serve (uncached input plus writes), the most a wrong render or
  marker can cost on that request;
- a warning about no request (a fold error, an unreadable record): nothing.

The cost at stake is what those tokens cost beyond being read from the cache, priced as a miss
cost is (:func:`projections.money.beyond_read_cost`): each token at the rate of the bucket it was
billed in, the request's 1-hour writes first, then its 5-minute writes, then its uncached input,
less the cache-read rate. A missed 5-minute write on Claude costs 1.25x input less 0.1x, not the
input rate. ``None`` when no price matches the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from dashboard.costs.pricing import COST_PLACES, Price, price_match
from projections.money import Tokens, beyond_read_cost


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a request's stakes are read from: reported usage and the analysis's figures."""

    model: str
    uncached: int
    read: int
    write_5m: int
    write_1h: int
    predicted_read: int | None = None
    wire_allows: int | None = None
    credited: int | None = None
    provider_missed: int | None = None

    @classmethod
    def of(
        cls, *, model: str, usage: Sequence[int | None], analysis: Mapping[str, Any] | None
    ) -> RequestFacts:
        """From usage ``(uncached, read, write 5m, write 1h)`` and the analysis's JSON (or ``None``)."""
        uncached, read, write_5m, write_1h = (n or 0 for n in usage)
        figures = (analysis or {}).get("figures") or {}
        diagnosis = (analysis or {}).get("provider_diagnosis") or {}
        return cls(
            model=model,
            uncached=uncached,
            read=read,
            write_5m=write_5m,
            write_1h=write_1h,
            predicted_read=_int(figures.get("predicted_read")),
            wire_allows=_int(figures.get("wire_allows")),
            credited=_int(figures.get("credited")),
            provider_missed=_int(diagnosis.get("missed_tokens")) if isinstance(diagnosis, dict) else None,
        )

    @property
    def written(self) -> int:
        """Both write buckets together."""
        return self.write_5m + self.write_1h

    @property
    def tokens(self) -> Tokens:
        """The request's prompt usage by bucket (its output is no part of any stake)."""
        return Tokens(self.uncached, self.read, self.write_5m, self.write_1h, 0)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tokens_at_stake(kind: str, facts: RequestFacts | None) -> int:
    """The prompt tokens a warning of ``kind`` about a request with ``facts`` questions (see the module)."""
    if facts is None:
        return 0
    if kind == "unexplained-miss" and facts.predicted_read is not None:
        return max(0, facts.predicted_read - facts.read)
    if kind == "over-credit" and facts.credited is not None and facts.wire_allows is not None:
        return max(0, facts.credited - facts.wire_allows)
    if kind == "model-error" and facts.predicted_read is not None:
        return abs(facts.read - facts.predicted_read)
    if kind == "provider-disagrees" and facts.provider_missed is not None:
        return max(0, facts.provider_missed)
    return facts.uncached + facts.written


def cost_at_stake(tokens: int, facts: RequestFacts, prices: Sequence[Price]) -> Decimal | None:
    """What ``tokens`` of the request of ``facts`` cost beyond a cache read, at the rates they were
    billed at (see the module), in USD; ``None`` when no price matches its model."""
    price = price_match(model=facts.model, prices=prices)
    if price is None:
        return None
    return beyond_read_cost(tokens, facts.tokens, price).quantize(COST_PLACES)
