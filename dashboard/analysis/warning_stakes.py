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

The cost at stake is those tokens at the model's input price less its cache-read price: what
they cost beyond being read from the cache. ``None`` when no price matches the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from dashboard.costs.pricing import COST_PLACES, MILLION, Price, price_match


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a request's stakes are read from: reported usage and the analysis's figures."""

    model: str
    uncached: int
    read: int
    written: int
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
            written=write_5m + write_1h,
            predicted_read=_int(figures.get("predicted_read")),
            wire_allows=_int(figures.get("wire_allows")),
            credited=_int(figures.get("credited")),
            provider_missed=_int(diagnosis.get("missed_tokens")) if isinstance(diagnosis, dict) else None,
        )


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


def cost_at_stake(tokens: int, model: str, prices: Sequence[Price]) -> Decimal | None:
    """``tokens`` at ``model``'s input price less its cache-read price, in USD; ``None`` unpriced."""
    price = price_match(model=model, prices=prices)
    if price is None:
        return None
    return (tokens * max(Decimal(0), price.input - price.cache_read) / MILLION).quantize(COST_PLACES)
