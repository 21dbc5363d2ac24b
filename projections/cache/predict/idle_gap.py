"""The idle gap behind an expired cache entry, and the remedy that gap supports.

An Anthropic entry lives 5 minutes, or 1 hour with ``ttl: "1h"``, from the start of the request
that last wrote or read it (prompt-caching guide, "Cache lifetime"). A 1-hour TTL keeps an entry
through an idle gap shorter than an hour and no longer, so the remedy of a TTL miss depends on the
gap: under an hour, the 1-hour TTL would have kept it (at 2x base per written token rather than
1.25x); past an hour no TTL helps and the write is the price of coming back. Both the predictor's
detail and the verdict's remedy state the gap, so the page says what the advice rests on.
"""

from __future__ import annotations

from projections.providers.mechanics import TTL_SECONDS

LONGEST_TTL_SECONDS = TTL_SECONDS["1h"]
"""The longest lifetime an Anthropic entry can ask for."""

UNKNOWN_GAP_REMEDY = (
    "The 5-minute entry expired between turns: use ttl 1h on the stable prefix (writes cost 2x base "
    "instead of 1.25x, reads stay at 0.1x) when turns are minutes apart; past an hour idle no TTL "
    "keeps it."
)
"""The remedy of a TTL miss whose idle gap is not known (a request without a start time)."""


def idle_text(seconds: float) -> str:
    """An idle gap for a sentence: ``45 s``, ``7 min 30 s``, ``4 h 2 min``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def ttl_remedy(idle_seconds: float | None) -> str:
    """What to do about a TTL miss after ``idle_seconds`` without a read (``None``: not known).

    The 1-hour TTL is offered only for a gap under an hour, where it would have kept the entry.
    """
    if idle_seconds is None:
        return UNKNOWN_GAP_REMEDY
    gap = idle_text(idle_seconds)
    if idle_seconds < LONGEST_TTL_SECONDS:
        return (
            f"The entry expired after {gap} idle: ttl 1h on the stable prefix would have kept it "
            "(writes cost 2x base instead of 1.25x, reads stay at 0.1x)."
        )
    return (
        f"The entry expired after {gap} idle, longer than the 1-hour TTL: no TTL keeps an entry that "
        "long, so this write is the price of resuming after a break; nothing to change."
    )
