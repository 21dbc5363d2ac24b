"""Provider cache models: the facts per platform and model, and a predictor over a request stream (DESIGN §7).

The table is versioned: each row names the platforms and model pattern it covers and the date
from which it holds, so a request is judged by the rules in force when it was sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

from projections.cache.diff import shared_prefix_length
from projections.cache.rendered_request import RenderedRequest

Family = Literal["anthropic", "openai", "deepseek", "gemini"]

TTL_SECONDS = {"5m": 300, "1h": 3600}
"""Anthropic cache lifetimes, refreshed by every read (Anthropic prompt caching docs, "Cache lifetime")."""

MATERIAL_SHARE = 0.05
MATERIAL_TOKENS = 2_000
"""A miss is material when more than 5 % and at least 2,000 tokens were re-processed (DESIGN §7)."""


@dataclass(frozen=True, slots=True)
class CacheFacts:
    """How one provider caches for one model family."""

    family: Family
    minimum_tokens: int
    breakpoints: int
    """Explicit breakpoints allowed per request; 0 where caching is automatic."""
    lookback: int
    granularity: int
    """Cached prefixes are counted in steps of this many tokens after the minimum (1 = exact)."""
    retention_seconds: int
    source: str


@dataclass(frozen=True, slots=True)
class FactsRow:
    """One row of the versioned table."""

    platforms: frozenset[str]
    model_pattern: str
    valid_from: date
    facts: CacheFacts


_ANTHROPIC_PLATFORMS = frozenset({"anthropic", "bedrock", "vertex", "openrouter"})
_ANTHROPIC_DOCS = "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching"

# Anthropic: up to 4 breakpoints; the read path checks at most 20 block positions before each
# breakpoint; minimum cacheable prompt length per model (prompt caching docs, "Cache limitations":
# 1,024 Sonnet 4.x / Opus 4 / 4.1, 2,048 Haiku 3 / 3.5, 4,096 Opus 4.5 / 4.6 and Haiku 4.5).
_ANTHROPIC_1024 = CacheFacts("anthropic", 1_024, 4, 20, 1, 300, _ANTHROPIC_DOCS)
_ANTHROPIC_2048 = CacheFacts("anthropic", 2_048, 4, 20, 1, 300, _ANTHROPIC_DOCS)
_ANTHROPIC_4096 = CacheFacts("anthropic", 4_096, 4, 20, 1, 300, _ANTHROPIC_DOCS)
# OpenAI: automatic on prompts of 1,024 tokens or more, hits in 128-token increments, in-memory
# retention of 5-10 minutes of inactivity (at most an hour), or 24 h with
# prompt_cache_retention="24h" (https://platform.openai.com/docs/guides/prompt-caching).
_OPENAI = CacheFacts(
    "openai", 1_024, 0, 0, 128, 600, "https://platform.openai.com/docs/guides/prompt-caching"
)
# DeepSeek: context caching on disk, on by default; prefix units persisted at request boundaries
# and reported as prompt_cache_hit_tokens / prompt_cache_miss_tokens; the cache is kept for hours
# (https://api-docs.deepseek.com/guides/kv_cache). 64-token storage unit.
_DEEPSEEK = CacheFacts("deepseek", 64, 0, 0, 64, 3_600, "https://api-docs.deepseek.com/guides/kv_cache")
# Gemini implicit caching: minimum 1,024 tokens for 2.5 Flash, 4,096 for 2.5 Pro; hits reported in
# usageMetadata.cachedContentTokenCount (https://ai.google.dev/gemini-api/docs/caching).
_GEMINI_FLASH = CacheFacts("gemini", 1_024, 0, 0, 1, 600, "https://ai.google.dev/gemini-api/docs/caching")
_GEMINI_PRO = CacheFacts("gemini", 4_096, 0, 0, 1, 600, "https://ai.google.dev/gemini-api/docs/caching")

FACTS_TABLE: tuple[FactsRow, ...] = (
    FactsRow(
        _ANTHROPIC_PLATFORMS,
        r"opus-4-[56]|opus-4\.[56]|haiku-4-5|haiku-4\.5",
        date(2025, 10, 1),
        _ANTHROPIC_4096,
    ),
    FactsRow(_ANTHROPIC_PLATFORMS, r"haiku", date(2024, 8, 14), _ANTHROPIC_2048),
    FactsRow(_ANTHROPIC_PLATFORMS, r"claude", date(2024, 8, 14), _ANTHROPIC_1024),
    FactsRow(frozenset({"openai", "azure", "openrouter"}), r"gpt|^o\d|openai/", date(2024, 10, 1), _OPENAI),
    FactsRow(frozenset({"deepseek", "openrouter"}), r"deepseek", date(2024, 8, 2), _DEEPSEEK),
    FactsRow(frozenset({"gemini", "vertex", "openrouter"}), r"gemini.*pro", date(2025, 5, 8), _GEMINI_PRO),
    FactsRow(frozenset({"gemini", "vertex", "openrouter"}), r"gemini", date(2025, 5, 8), _GEMINI_FLASH),
)


class UnknownModelError(LookupError):
    """No row of the facts table covers a platform and model."""


def cache_facts(platform: str, model: str, on: date | None = None) -> CacheFacts:
    """The cache facts for a platform and model, as in force on ``on`` (default: the newest rows)."""
    for row in FACTS_TABLE:
        matches = platform in row.platforms and re.search(row.model_pattern, model, re.IGNORECASE)
        if matches and (on is None or on >= row.valid_from):
            return row.facts
    raise UnknownModelError(f"no cache facts for platform {platform!r}, model {model!r}")


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

    @property
    def write(self) -> int:
        """Both write buckets together."""
        return self.write_5m + self.write_1h


def is_material(reprocessed: int, prompt_total: int) -> bool:
    """More than 5 % of the prompt and at least 2,000 tokens re-processed."""
    return reprocessed >= MATERIAL_TOKENS and reprocessed > MATERIAL_SHARE * prompt_total


class CachePredictor:
    """Walks requests in start order with one cache state shared by every lineage.

    Lineages share the provider's cache (a subagent can read the main chain's tools and system
    prompt), but each request is compared with the previous request of its own lineage.
    """

    def __init__(self, state: CacheState | None = None) -> None:
        self.state = state if state is not None else CacheState()
        self.previous: dict[str, CallInput] = {}

    def expired_hashes(self, now: datetime | None) -> set[str]:
        """Prefix hashes of entries that have expired by ``now``."""
        if now is None:
            return set()
        moment = now.timestamp()
        return {
            key
            for key, entry in self.state.entries.items()
            if entry.expires_at is not None and entry.expires_at <= moment
        }

    def predict(self, call: CallInput) -> Prediction:
        """Predict one request and update the cache state with what it reads and writes."""
        facts = cache_facts(call.platform, call.rendered.model, _day(call.started_at))
        prev = self.previous.get(call.lineage)
        if facts.family == "anthropic":
            prediction = _predict_anthropic(self.state, call, prev, facts)
        else:
            prediction = _predict_automatic(self.state, call, prev, facts)
        self.previous[call.lineage] = call
        return prediction


def predict_calls(calls: Sequence[CallInput], state: CacheState | None = None) -> list[Prediction]:
    """Predict every request in the order given (by start time) with one shared cache state."""
    predictor = CachePredictor(state)
    return [predictor.predict(call) for call in calls]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment is not None else None


def _seconds(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def _usable(entry: CacheEntry, now: float | None) -> bool:
    if now is None:
        return True
    if entry.expires_at is not None and entry.expires_at <= now:
        return False
    return entry.readable_at is None or entry.readable_at <= now


def _predict_anthropic(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    cur = call.rendered
    now = _seconds(call.started_at)
    markers = cur.markers
    groups, hashes = cur.lookback_groups, cur.prefix_hashes
    best: CacheEntry | None = None
    for marker in markers:
        group = groups[marker.position]
        p = marker.position
        while p >= 0 and group - groups[p] < facts.lookback:
            entry = state.entries.get(hashes[p])
            usable = entry is not None and entry.position == p and _usable(entry, now)
            if usable and entry is not None and (best is None or entry.tokens > best.tokens):
                best = entry
            p -= 1
    read = best.tokens if best is not None else 0
    bps = [(cur.prefix_tokens(m.position), m.ttl) for m in markers]
    write_5m, write_1h = split_writes(read, bps, facts.minimum_tokens)
    blocked = _blocked_entries(state, cur, read, now, facts)
    label, detail = _anthropic_label(call, prev, facts, read, blocked)
    if best is not None and now is not None:
        best.expires_at = now + TTL_SECONDS[best.ttl]
    _write_entries(state, call, facts, now)
    reprocessed, material = _material(call, prev, read, label)
    return Prediction(
        read, write_5m, write_1h, label, detail, material, reprocessed, best.writer if best else None
    )


def _write_entries(state: CacheState, call: CallInput, facts: CacheFacts, now: float | None) -> None:
    cur = call.rendered
    readable = _seconds(call.first_token_at)
    if readable is None:
        readable = now
    for marker in cur.markers:
        tokens = cur.prefix_tokens(marker.position)
        if tokens < facts.minimum_tokens:
            continue
        key = cur.prefix_hashes[marker.position]
        expires = now + TTL_SECONDS[marker.ttl] if now is not None else None
        entry = state.entries.get(key)
        if entry is not None and _usable(entry, now):
            if expires is not None and (entry.expires_at is None or expires > entry.expires_at):
                entry.expires_at = expires
                entry.ttl = marker.ttl
            continue
        if (
            entry is not None
            and entry.readable_at is not None
            and now is not None
            and entry.readable_at > now
        ):
            # A concurrent writer: both write, the entry becomes readable when the first one answers.
            if readable is not None:
                entry.readable_at = min(entry.readable_at, readable)
            if expires is not None and entry.expires_at is not None:
                entry.expires_at = max(entry.expires_at, expires)
            continue
        state.entries[key] = CacheEntry(key, marker.position, tokens, marker.ttl, expires, readable, call.key)


def _blocked_entries(
    state: CacheState, cur: RenderedRequest, read: int, now: float | None, facts: CacheFacts
) -> list[tuple[str, CacheEntry]]:
    """Entries matching this request's prefix, larger than what it reads, and why each was not read."""
    found: list[tuple[str, CacheEntry]] = []
    hashes, n = cur.prefix_hashes, len(cur)
    for entry in state.entries.values():
        if entry.tokens <= read or entry.position >= n or hashes[entry.position] != entry.prefix_hash:
            continue
        if now is not None and entry.expires_at is not None and entry.expires_at <= now:
            found.append(("ttl-expired", entry))
        elif now is not None and entry.readable_at is not None and entry.readable_at > now:
            found.append(("concurrent", entry))
        elif facts.lookback:
            found.append(("beyond-lookback", entry))
    found.sort(key=lambda item: -item[1].tokens)
    return found


def _anthropic_label(
    call: CallInput,
    prev: CallInput | None,
    facts: CacheFacts,
    read: int,
    blocked: list[tuple[str, CacheEntry]],
) -> tuple[str | None, str]:
    cur = call.rendered
    if not cur.markers:
        return "no-breakpoint", "the request carries no cache_control marker"
    last = max(m.position for m in cur.markers)
    if cur.prefix_tokens(last) < facts.minimum_tokens:
        return "below-minimum", (
            f"prefix through the last breakpoint is {cur.prefix_tokens(last)} tokens, "
            f"the minimum for {cur.model} is {facts.minimum_tokens}"
        )
    if prev is not None and prev.rendered.model != cur.model:
        return "model-changed", f"{prev.rendered.model} → {cur.model}"
    if prev is not None:
        changed = _prefix_change(prev.rendered, cur, facts)
        if changed is not None:
            return changed
    reasons = {
        "ttl-expired": "the entry written by {w} ({t} tokens) expired",
        "concurrent": (
            "the entry written by {w} ({t} tokens) was not readable yet: its writer had not begun answering"
        ),
        "beyond-lookback": (
            "the entry written by {w} ({t} tokens) lies beyond the 20-position lookback of every breakpoint"
        ),
    }
    if blocked:
        reason, entry = blocked[0]
        return reason, reasons[reason].format(w=entry.writer or "an earlier request", t=entry.tokens)
    if prev is not None:
        prev_written = _written_tokens(prev.rendered, facts)
        if 0 < read < prev_written:
            return "partial-hit", f"read {read} of the {prev_written} tokens the previous request wrote"
    if call.reported_read is not None and is_material(read - call.reported_read, cur.total_tokens):
        return "unexplained", f"reported read {call.reported_read} is below the predicted {read}"
    return None, ""


def _written_tokens(rendered: RenderedRequest, facts: CacheFacts) -> int:
    sizes = [rendered.prefix_tokens(m.position) for m in rendered.markers]
    return max((s for s in sizes if s >= facts.minimum_tokens), default=0)


def _prefix_change(prev: RenderedRequest, cur: RenderedRequest, facts: CacheFacts) -> tuple[str, str] | None:
    shared = shared_prefix_length(prev, cur)
    header_changed = prev.header_hash != cur.header_hash
    written = [m.position for m in prev.markers if prev.prefix_tokens(m.position) >= facts.minimum_tokens]
    if not written:
        return None
    if not header_changed and shared > max(written):
        return None
    position = 0 if header_changed else shared
    tier = cur.tiers[position] if position < len(cur) else prev.tiers[position]
    marked_here = any(m.position == position for m in prev.markers)
    kept_before = any(p < position for p in written)
    if (
        not header_changed
        and marked_here
        and not kept_before
        and position > 0
        and cur.cum_tokens[position] >= facts.minimum_tokens
    ):
        return "no-write-at-reusable-position", (
            f"the breakpoint sits on {cur.identity(position)}, which changed; the "
            f"{cur.cum_tokens[position]} stable tokens before it were never written"
        )
    return f"prefix-changed@{tier}:{position}", f"first change at {tier} position {position}"


def _material(call: CallInput, prev: CallInput | None, predicted: int, label: str | None) -> tuple[int, bool]:
    if prev is None or label is None:
        return 0, False
    cur = call.rendered
    shared = shared_prefix_length(prev.rendered, cur) if prev.rendered.header_hash == cur.header_hash else 0
    read = call.reported_read if call.reported_read is not None else predicted
    reprocessed = max(0, cur.cum_tokens[shared] - read)
    return reprocessed, is_material(reprocessed, cur.total_tokens)


def _predict_automatic(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    """Automatic prefix caches (OpenAI, DeepSeek, Gemini): every request writes its whole prompt."""
    cur = call.rendered
    now = _seconds(call.started_at)
    hashes = cur.prefix_hashes
    entries = state.entries
    lo, hi = 0, len(cur)  # the first lo units are held; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        entry = entries.get(hashes[mid - 1])
        if entry is not None and _usable(entry, now):
            lo = mid
        else:
            hi = mid - 1
    shared_tokens = cur.cum_tokens[lo]
    read = openai_cached_tokens(shared_tokens, facts.minimum_tokens, facts.granularity)
    read_from = entries[hashes[lo - 1]].writer if lo else None
    label: str | None = None
    detail = ""
    if cur.total_tokens < facts.minimum_tokens:
        label, detail = "below-minimum", f"{cur.total_tokens} tokens, the minimum is {facts.minimum_tokens}"
    elif prev is not None and prev.rendered.model != cur.model:
        label, detail = "model-changed", f"{prev.rendered.model} → {cur.model}"
    elif prev is not None:
        shared = shared_prefix_length(prev.rendered, cur)
        if shared < len(prev.rendered) or prev.rendered.header_hash != cur.header_hash:
            position = 0 if prev.rendered.header_hash != cur.header_hash else shared
            tier = cur.tiers[position] if position < len(cur) else prev.rendered.tiers[position]
            label, detail = f"prefix-changed@{tier}:{position}", f"first change at {tier} position {position}"
        else:
            last = entries.get(prev.rendered.prefix_hashes[-1]) if len(prev.rendered) else None
            if last is not None and not _usable(last, now):
                label, detail = "ttl-expired", f"the prompt of {last.writer} is no longer retained"
            elif call.reported_read is not None and is_material(read - call.reported_read, cur.total_tokens):
                label, detail = (
                    "unexplained",
                    f"reported read {call.reported_read} is below the predicted {read}",
                )
    retention = 86_400 if cur.params.get("prompt_cache_retention") == "24h" else facts.retention_seconds
    expires = now + retention if now is not None else None
    readable = _seconds(call.first_token_at) or now
    for i, key in enumerate(hashes):
        entry = entries.get(key)
        if entry is not None and _usable(entry, now):
            entry.expires_at = expires
        else:
            entries[key] = CacheEntry(key, i, cur.cum_tokens[i + 1], "auto", expires, readable, call.key)
    reprocessed, material = _material(call, prev, read, label)
    return Prediction(read, 0, 0, label, detail, material, reprocessed, read_from)
