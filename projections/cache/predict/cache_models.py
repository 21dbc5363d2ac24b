"""Provider cache models: the facts per platform and model, and the cache state predictions read (DESIGN §7).

The facts come from the dated table of :mod:`projections.providers.rules`: each row names the
platforms and model pattern it covers and the date from which it holds, so a request is judged by
the rules in force when it was sent. The predictors of each scheme
(:mod:`projections.cache.predict.anthropic`, :mod:`projections.cache.predict.automatic`) share
the entries, the request and prediction types and the materiality rule here;
:mod:`projections.cache.predict.prediction` walks a request stream through them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from typing import Literal

from projections.cache.predict.materiality import is_material
from projections.cache.render.diff import shared_prefix_length
from projections.cache.render.rendered_request import RenderedRequest
from projections.providers.mechanics import TTL_SECONDS as TTL_SECONDS
from projections.providers.mechanics import Scheme
from projections.providers.rules import ModelRule, model_rule

Family = Literal["anthropic", "openai", "deepseek", "gemini"]


@dataclass(frozen=True, slots=True)
class CacheFacts:
    """How one provider caches for one model family: a row of :mod:`projections.providers.rules`."""

    family: Family
    minimum_tokens: int
    breakpoints: int
    """Breakpoints a request may write; 0 where caching is automatic."""
    lookback: int
    granularity: int
    """Cached prefixes are counted in steps of this many tokens after the minimum (1 = exact)."""
    retention_seconds: int
    """The default lifetime of an entry."""
    source: str
    scheme: Scheme = "anthropic-breakpoints"
    lifetimes: Mapping[str, int] = field(default_factory=dict)
    """Every lifetime the scheme knows, in seconds, by the name a request uses for it."""

    @classmethod
    def of(cls, rule: ModelRule) -> CacheFacts:
        """The predictor's view of a row of the provider rules."""
        mechanics = rule.mechanics
        return cls(
            family=rule.provider,
            minimum_tokens=rule.minimum_tokens,
            breakpoints=mechanics.writes_per_request,
            lookback=mechanics.lookback,
            granularity=mechanics.granularity,
            retention_seconds=mechanics.lifetimes[mechanics.default_lifetime],
            source=rule.minimum_source.url,
            scheme=rule.scheme,
            lifetimes=mechanics.lifetimes,
        )

    def lifetime(self, name: object) -> int:
        """Seconds an entry lives when the request asks for lifetime ``name``; the default otherwise."""
        return (
            self.lifetimes.get(name, self.retention_seconds)
            if isinstance(name, str)
            else self.retention_seconds
        )


class UnknownModelError(LookupError):
    """No row of the provider rules covers a platform and model."""


@lru_cache(maxsize=1024)
def cache_facts(platform: str, model: str, on: date | None = None) -> CacheFacts:
    """The cache facts for a platform and model, as in force on ``on`` (default: the newest rows).

    Kept per argument: the predictor asks for every request, and matching the rules' patterns cost
    more than predicting the request. The facts are frozen, so a shared copy is safe."""
    rule = model_rule(platform, model, on)
    if rule is None:
        raise UnknownModelError(f"no cache facts for platform {platform!r}, model {model!r}")
    return CacheFacts.of(rule)


def openai_cached_tokens(shared: int, minimum: int = 1_024, step: int = 128) -> int:
    """Tokens OpenAI reports cached for a shared prefix of L tokens: 1,024 + 128·⌊(L - 1,024)/128⌋."""
    if shared < minimum:
        return 0
    return minimum + step * ((shared - minimum) // step)


def split_writes(read: int, breakpoints: Sequence[tuple[int, str]], minimum: int) -> tuple[int, int]:
    """(5-minute write, 1-hour write) for a request reading ``read`` tokens.

    ``breakpoints`` are (prefix tokens, ttl) per breakpoint. Anthropic bills read = A, 1-hour write
    = B - A and 5-minute write = C - B, with B the last 1-hour breakpoint and C the last one.
    """
    written = [(tokens, ttl) for tokens, ttl in breakpoints if tokens >= minimum]
    if not written:
        return 0, 0
    c = max(tokens for tokens, _ in written)
    b = max((tokens for tokens, ttl in written if ttl == "1h"), default=0)
    write_1h = max(0, b - read)
    write_5m = max(0, c - max(read, b))
    return write_5m, write_1h


@dataclass(slots=True)
class CacheEntry:
    """One prefix the provider holds."""

    prefix_hash: str
    position: int
    tokens: int
    ttl: str
    expires_at: float | None
    readable_at: float | None
    writer: str


@dataclass(slots=True)
class CacheState:
    """Every entry written so far, keyed by prefix hash."""

    entries: dict[str, CacheEntry] = field(default_factory=dict)
    seen: dict[str, CacheEntry] = field(default_factory=dict)
    """Every prefix sent so far, cached or not: where DeepSeek looks for a common prefix to persist."""


@dataclass(frozen=True, slots=True)
class CallInput:
    """One request as the predictor needs it."""

    key: str
    rendered: RenderedRequest
    platform: str
    lineage: str
    started_at: datetime | None = None
    first_token_at: datetime | None = None
    reported_read: int | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the provider model expects for one request."""

    read: int
    write_5m: int
    write_1h: int
    label: str | None
    detail: str
    material: bool
    reprocessed: int
    read_from: str | None = None
    """The request whose entry the predicted read lands on."""
    idle_seconds: float | None = None
    """For a ``ttl-expired`` miss: how long the entry it would have read had gone without a read
    or write before this request, when the clock says."""

    @property
    def write(self) -> int:
        """Both write buckets together."""
        return self.write_5m + self.write_1h


def unexplained_label(call: CallInput, read: int) -> tuple[str | None, str]:
    """The last rule of every miss label: the provider reported materially less than predicted."""
    prompt_total = call.rendered.total_tokens
    if call.reported_read is not None and is_material(read - call.reported_read, prompt_total):
        return "unexplained", f"reported read {call.reported_read} is below the predicted {read}"
    return None, ""


def seconds(moment: datetime | None) -> float | None:
    """A moment as epoch seconds, the clock of cache entries; None stays None."""
    return moment.timestamp() if moment is not None else None


def entry_usable(entry: CacheEntry, now: float | None) -> bool:
    """Whether ``entry`` can be read at ``now``: not expired, and its writer has begun answering."""
    if now is None:
        return True
    if entry.expires_at is not None and entry.expires_at <= now:
        return False
    return entry.readable_at is None or entry.readable_at <= now


def material_reprocessing(
    call: CallInput, prev: CallInput | None, predicted: int, label: str | None
) -> tuple[int, bool]:
    """Tokens re-processed past the prefix shared with the previous request, and whether that is material."""
    if prev is None or label is None:
        return 0, False
    cur = call.rendered
    shared = shared_prefix_length(prev.rendered, cur) if prev.rendered.header_hash == cur.header_hash else 0
    read = call.reported_read if call.reported_read is not None else predicted
    reprocessed = max(0, cur.cum_tokens[shared] - read)
    return reprocessed, is_material(reprocessed, cur.total_tokens)
