"""A small model of provider prompt caches, so the demo's usage figures agree with its bytes.

Anthropic (DESIGN §7): an entry is written for the prefix through each breakpoint of a request whose
prefix reaches the model's minimum; a later request reads the longest prefix that an earlier request
wrote, that is unchanged, still inside its TTL and within 20 positions before one of its breakpoints;
it writes the rest up to its last breakpoint. A read refreshes the entry's TTL. OpenAI: automatic
caching of the shared prefix in 128-token steps above 1,024 tokens.

Token counts are the generator's own estimate (characters ÷ 4); callers pass prefix points with
cumulative token counts and a chain key that identifies the whole prefix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from projections.providers.mechanics import MECHANICS, TTL_SECONDS
from projections.providers.rules import model_rule

# The facts come from the engine's one table of provider rules; the model that applies them here is
# the generator's own, so the analysis is checked against an independent reading of those rules.
LOOKBACK = MECHANICS["anthropic-breakpoints"].lookback
"""Positions a breakpoint looks back for an entry an earlier request wrote."""

TTL_5M = TTL_SECONDS["5m"]
TTL_1H = TTL_SECONDS["1h"]

_DEMO_MODELS = (
    "claude-sonnet-4-20250514",
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1-20250805",
    "claude-3-5-haiku-20241022",
    "claude-opus-4-6",
    "claude-haiku-4-5-20251001",
)


def _minimum(platform: str, model: str) -> int:
    rule = model_rule(platform, model)
    assert rule is not None, model
    return rule.minimum_tokens


ANTHROPIC_MINIMUM = {model: _minimum("anthropic", model) for model in _DEMO_MODELS}
"""Minimum cacheable prefix of each model the demo sends, in tokens (DESIGN §7)."""

FRAMING_TOKENS = 3
"""Tokens of message framing after the last breakpoint: billed as uncached input on every request."""

OPENAI_MINIMUM = _minimum("openai", "gpt-4o")
OPENAI_STEP = MECHANICS["openai-prefix"].granularity
OPENAI_RETENTION_S = 600


def estimate_tokens(text: str) -> int:
    """The generator's token estimate: characters ÷ 4, at least one token."""
    return max(1, len(text) // 4)


@dataclass(frozen=True, slots=True)
class PrefixPoint:
    """The prefix of a request through one unit: its identity and its size."""

    key: bytes
    tokens: int


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A cache marker on the unit at ``position`` with its TTL in seconds."""

    position: int
    ttl_s: int = TTL_5M


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """What one request was billed, in Anthropic's disjoint buckets."""

    uncached_input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int

    @property
    def cache_write(self) -> int:
        """Both write buckets together."""
        return self.cache_write_5m + self.cache_write_1h

    @property
    def prompt_total(self) -> int:
        """Every prompt token processed: uncached + read + writes."""
        return self.uncached_input + self.cache_read + self.cache_write


def prefix_chain(header: str, units: Iterable[tuple[str, int]]) -> list[PrefixPoint]:
    """Chain keys and cumulative tokens for ``units`` (canonical text, tokens), seeded by ``header``.

    ``header`` holds what keys the cache besides the content (model, tool choice, thinking): two
    requests share a prefix only if their headers and every unit up to it are equal.
    """
    chain: list[PrefixPoint] = []
    key = hashlib.blake2b(header.encode(), digest_size=12).digest()
    total = 0
    for text, tokens in units:
        key = extend_key(key, text)
        total += tokens
        chain.append(PrefixPoint(key=key, tokens=total))
    return chain


def extend_key(key: bytes, text: str) -> bytes:
    """The chain key of a prefix extended by one unit's canonical text."""
    return hashlib.blake2b(key + text.encode("utf-8", "surrogatepass"), digest_size=12).digest()


@dataclass(slots=True)
class _Entry:
    expires_at: float
    ttl_s: int


class AnthropicCache:
    """The cache entries of one organisation, as requests read and write them over time."""

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}

    def request(
        self,
        prefix: Sequence[PrefixPoint],
        breakpoints: Sequence[Breakpoint],
        *,
        minimum: int,
        at_s: float,
    ) -> CacheUsage:
        """Bill one request sent at ``at_s`` and record the entries it writes or refreshes."""
        total = prefix[-1].tokens if prefix else 0
        marks = sorted(breakpoints, key=lambda mark: mark.position)
        read_pos = self._longest_readable(prefix, marks, at_s)
        read = prefix[read_pos].tokens if read_pos is not None else 0
        if read_pos is not None:
            entry = self._entries[prefix[read_pos].key]
            entry.expires_at = at_s + entry.ttl_s
        written = [mark for mark in marks if prefix[mark.position].tokens >= minimum]
        write_1h = write_5m = 0
        if written:
            last_1h = max((m.position for m in written if m.ttl_s == TTL_1H), default=None)
            through_1h = prefix[last_1h].tokens if last_1h is not None else read
            write_1h = max(0, through_1h - read)
            write_5m = max(0, prefix[written[-1].position].tokens - max(read, through_1h))
            for mark in written:
                key = prefix[mark.position].key
                if key not in self._entries or self._entries[key].expires_at < at_s:
                    self._entries[key] = _Entry(expires_at=at_s + mark.ttl_s, ttl_s=mark.ttl_s)
        return CacheUsage(
            uncached_input=total - read - write_1h - write_5m + FRAMING_TOKENS,
            cache_read=read,
            cache_write_5m=write_5m,
            cache_write_1h=write_1h,
        )

    def _longest_readable(
        self, prefix: Sequence[PrefixPoint], marks: Sequence[Breakpoint], at_s: float
    ) -> int | None:
        best: int | None = None
        for mark in marks:
            low = max(0, mark.position - LOOKBACK + 1)
            for pos in range(mark.position, low - 1, -1):
                entry = self._entries.get(prefix[pos].key)
                if entry is not None and entry.expires_at >= at_s:
                    if best is None or pos > best:
                        best = pos
                    break
        return best


class OpenAICache:
    """OpenAI's automatic prefix cache: the shared prefix with a recent request, in 128-token steps."""

    def __init__(self) -> None:
        self._seen: dict[bytes, float] = {}

    def request(self, prefix: Sequence[PrefixPoint], *, at_s: float) -> int:
        """Cached tokens for a request sent at ``at_s``; remembers its prefix for later requests."""
        shared = 0
        for point in prefix:
            seen = self._seen.get(point.key)
            if seen is None or at_s - seen > OPENAI_RETENTION_S:
                break
            shared = point.tokens
        for point in prefix:
            self._seen[point.key] = at_s
        if shared < OPENAI_MINIMUM:
            return 0
        return OPENAI_MINIMUM + OPENAI_STEP * ((shared - OPENAI_MINIMUM) // OPENAI_STEP)
