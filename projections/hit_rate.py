"""The cache hit rate: the one rule every page, export and chart uses (DESIGN §3).

hit rate = read ÷ (uncached + read + writes)

It is ``None`` — unknown, not 0 — in two cases:

- **nothing reported**: the provider gave neither a cache-read nor a cache-write figure. A provider
  that does not report caching (an OpenAI response without ``cached_tokens``) says nothing about
  hits, so a rate of 0 would be a false claim. When only one of the two is reported the other
  counts as 0: a provider that reports writes but no reads has read nothing from the cache.
- **nothing to divide by**: uncached + read + writes is 0.

An unreported uncached figure counts as 0, since it adds nothing to the denominator.
"""

from __future__ import annotations


def hit_rate(*, read: int | None, uncached: int | None, writes: int | None) -> float | None:
    """read ÷ (uncached + read + writes), or ``None`` when no cache figure was reported or the sum is 0.

    ``None`` for ``read`` or ``writes`` means "the provider did not report it" (not 0); ``writes``
    is every cache write, whatever its lifetime.
    """
    if read is None and writes is None:
        return None
    prompt = (uncached or 0) + (read or 0) + (writes or 0)
    if prompt == 0:
        return None
    return (read or 0) / prompt
