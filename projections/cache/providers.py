"""Provider cache models: the facts per platform and model, and a predictor over a request stream (DESIGN §7).

The facts come from the dated table of :mod:`projections.provider_rules`: each row names the
platforms and model pattern it covers and the date from which it holds, so a request is judged by
the rules in force when it was sent. Each caching scheme has its predictor here: Anthropic's
breakpoints with a lookback, OpenAI's GPT-5.6 breakpoints with exact matches, DeepSeek's whole
prefix units, and the automatic prefix caches of older OpenAI models and Gemini.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

from projections.cache.diff import shared_prefix_length
from projections.cache.rendered_request import RenderedRequest
from projections.cache_mechanics import MECHANICS, Scheme
from projections.provider_rules import ModelRule, model_rule

Family = Literal["anthropic", "openai", "deepseek", "gemini"]

TTL_SECONDS = {**MECHANICS["anthropic-breakpoints"].lifetimes, **MECHANICS["openai-breakpoints"].lifetimes}
"""Lifetime of a breakpoint's entry by the ttl it names: Anthropic's ``5m`` and ``1h``, refreshed by
every read (prompt caching docs, "Cache lifetime"), and OpenAI's ``30m`` and ``12h``."""

MATERIAL_SHARE = 0.05
MATERIAL_TOKENS = 2_000
"""A miss is material when more than 5 % and at least 2,000 tokens were re-processed (DESIGN §7)."""


@dataclass(frozen=True, slots=True)
class CacheFacts:
    """How one provider caches for one model family: a row of :mod:`projections.provider_rules`."""

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


def cache_facts(platform: str, model: str, on: date | None = None) -> CacheFacts:
    """The cache facts for a platform and model, as in force on ``on`` (default: the newest rows)."""
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
        if facts.scheme == "anthropic-breakpoints":
            prediction = _predict_anthropic(self.state, call, prev, facts)
        elif facts.scheme == "openai-breakpoints":
            prediction = _predict_openai_breakpoints(self.state, call, prev, facts)
        elif facts.scheme == "deepseek-units":
            prediction = _predict_units(self.state, call, prev, facts)
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
    label, detail = _automatic_label(state, call, prev, facts, read, now)
    # prompt_cache_retention ("in_memory" or "24h") is kept on the request by the renderer.
    retention = facts.lifetime(cur.params.get("prompt_cache_retention"))
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


def _automatic_label(
    state: CacheState,
    call: CallInput,
    prev: CallInput | None,
    facts: CacheFacts,
    read: int,
    now: float | None,
) -> tuple[str | None, str]:
    """Why a request of a cache without breakpoints read less than its prompt, first rule that holds."""
    cur = call.rendered
    if cur.total_tokens < facts.minimum_tokens:
        return "below-minimum", f"{cur.total_tokens} tokens, the minimum is {facts.minimum_tokens}"
    if prev is None:
        return None, ""
    if prev.rendered.model != cur.model:
        return "model-changed", f"{prev.rendered.model} → {cur.model}"
    shared = shared_prefix_length(prev.rendered, cur)
    if shared < len(prev.rendered) or prev.rendered.header_hash != cur.header_hash:
        position = 0 if prev.rendered.header_hash != cur.header_hash else shared
        tier = cur.tiers[position] if position < len(cur) else prev.rendered.tiers[position]
        return f"prefix-changed@{tier}:{position}", f"first change at {tier} position {position}"
    last = state.entries.get(prev.rendered.prefix_hashes[-1]) if len(prev.rendered) else None
    if last is not None and not _usable(last, now):
        return "ttl-expired", f"the prompt of {last.writer} is no longer retained"
    if call.reported_read is not None and is_material(read - call.reported_read, cur.total_tokens):
        return "unexplained", f"reported read {call.reported_read} is below the predicted {read}"
    return None, ""


def _longest_entry(state: CacheState, cur: RenderedRequest, now: float | None) -> int:
    """Units of the longest prefix of ``cur`` that is a usable entry as a whole (0 for none).

    For caches that match whole stored prefixes only, not any shared prefix: the prefix hashes are
    walked from the end, so the first hit is the longest.
    """
    entries = state.entries
    hashes = cur.prefix_hashes
    for p in range(len(hashes) - 1, -1, -1):
        entry = entries.get(hashes[p])
        if entry is not None and entry.position == p and _usable(entry, now):
            return p + 1
    return 0


# --- OpenAI GPT-5.6 and later: breakpoints, exact matches ---------------------------------------


def openai_breakpoints(rendered: RenderedRequest, facts: CacheFacts) -> list[tuple[int, str]]:
    """(position, lifetime) of each breakpoint a GPT-5.6 request writes, in order.

    The prompt-caching guide and the ``prompt_cache_options`` reference (checked 2026-12-03): a
    request writes up to four breakpoints; in ``implicit`` mode (the default) OpenAI adds one at the
    end of the newest user or tool message and writes the latest three explicit ones
    (``prompt_cache_breakpoint`` on content blocks); in ``explicit`` mode only the latest four
    explicit ones, so without any nothing is cached. A breakpoint without its own ``ttl`` inherits
    ``prompt_cache_options.ttl``, ``30m`` by default.
    """
    options = rendered.params.get("prompt_cache_options")
    options = options if isinstance(options, dict) else {}
    request_ttl = options.get("ttl") if isinstance(options.get("ttl"), str) else "30m"
    assert isinstance(request_ttl, str)
    implicit = options.get("mode", "implicit") != "explicit"
    explicit = [(m.position, m.ttl if m.ttl in facts.lifetimes else request_ttl) for m in rendered.markers]
    points = explicit[-(facts.breakpoints - 1) :] if implicit else explicit[-facts.breakpoints :]
    if implicit:
        newest = [p for p, role in enumerate(rendered.roles) if role in ("user", "tool")]
        if newest and all(p != newest[-1] for p, _ in points):
            points.append((newest[-1], request_ttl))
    return sorted(points)


def _predict_openai_breakpoints(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    """GPT-5.6 and later: a read matches an entry an earlier breakpoint wrote, exactly at its end.

    Unlike older OpenAI models there is no fallback to a shorter prefix and no 128-token rounding:
    a prompt that shares 9,000 tokens with the last one but whose breakpoints sit elsewhere reads
    nothing. Writes are the tokens past the read up to the furthest breakpoint not already held,
    reported as ``cache_write_tokens`` and billed at 1.25x input.
    """
    cur = call.rendered
    now = _seconds(call.started_at)
    held = _longest_entry(state, cur, now)
    read = cur.cum_tokens[held] if held >= 1 and cur.cum_tokens[held] >= facts.minimum_tokens else 0
    read_from = state.entries[cur.prefix_hashes[held - 1]].writer if read else None
    points = [
        (p, ttl) for p, ttl in openai_breakpoints(cur, facts) if cur.prefix_tokens(p) >= facts.minimum_tokens
    ]
    new = [cur.prefix_tokens(p) for p, _ in points if cur.prefix_tokens(p) > read]
    write = max(0, max(new, default=read) - read)
    label, detail = _automatic_label(state, call, prev, facts, read, now)
    if label is None and not points:
        label, detail = (
            "no-breakpoint",
            "prompt_cache_options.mode is explicit and no block carries a breakpoint",
        )
    elif label is None and prev is not None:
        shared = cur.cum_tokens[shared_prefix_length(prev.rendered, cur)]
        if is_material(shared - read, cur.total_tokens):
            label, detail = (
                "partial-hit",
                f"{shared} tokens are shared with the previous request "
                f"but only {read} end at a breakpoint it wrote",
            )
    readable = _seconds(call.first_token_at) or now
    for p, ttl in points:
        key = cur.prefix_hashes[p]
        expires = now + facts.lifetime(ttl) if now is not None else None
        entry = state.entries.get(key)
        if entry is not None and _usable(entry, now):
            entry.expires_at = (
                expires if expires is None or entry.expires_at is None else max(expires, entry.expires_at)
            )
        else:
            state.entries[key] = CacheEntry(key, p, cur.prefix_tokens(p), ttl, expires, readable, call.key)
    reprocessed, material = _material(call, prev, read, label)
    return Prediction(read, write, 0, label, detail, material, reprocessed, read_from)


# --- DeepSeek: whole cache prefix units ------------------------------------------------------------


def _predict_units(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    """DeepSeek: a hit is the longest persisted cache prefix unit the prompt contains whole.

    DeepSeek's context-caching guide (api-docs.deepseek.com/guides/kv_cache, checked 2026-12-03):
    "Each cached prefix is an independent, complete unit. A subsequent request can only hit the
    cache if it fully matches a cache prefix unit." Units are persisted at the end of each request's
    input and of its output, and for a common prefix the system detects across requests: A+B then
    A+B+C hits A+B; A+B then A+C misses, persisting A, so a third A+D hits A. The guide's third
    kind, units at fixed token intervals inside long inputs, names no interval and is not modelled.
    """
    cur = call.rendered
    now = _seconds(call.started_at)
    expires = now + facts.retention_seconds if now is not None else None
    readable = _seconds(call.first_token_at) or now
    if prev is not None:
        _persist_output_unit(state, prev, cur, expires)
    held = _longest_entry(state, cur, now)
    read = cur.cum_tokens[held]
    read_from = state.entries[cur.prefix_hashes[held - 1]].writer if held else None
    label, detail = _automatic_label(state, call, prev, facts, read, now)
    common = _longest_seen(state, cur)
    hashes = cur.prefix_hashes
    if common > held:
        # Two requests share these units but neither persisted them whole: the system does now.
        key = hashes[common - 1]
        state.entries[key] = CacheEntry(
            key, common - 1, cur.cum_tokens[common], "unit", expires, readable, call.key
        )
    if hashes:
        key = hashes[-1]
        state.entries[key] = CacheEntry(
            key, len(hashes) - 1, cur.cum_tokens[-1], "unit", expires, readable, call.key
        )
    for i, key in enumerate(hashes):
        state.seen[key] = CacheEntry(key, i, cur.cum_tokens[i + 1], "seen", None, None, call.key)
    reprocessed, material = _material(call, prev, read, label)
    return Prediction(read, 0, 0, label, detail, material, reprocessed, read_from)


def _persist_output_unit(
    state: CacheState, prev: CallInput, cur: RenderedRequest, expires: float | None
) -> None:
    """The unit at the end of the previous request's output: its prompt and the reply ``cur`` carries."""
    n = len(prev.rendered)
    if n == 0 or n >= len(cur) or cur.prefix_hashes[n - 1] != prev.rendered.prefix_hashes[-1]:
        return
    end = n
    while end < len(cur) and cur.roles[end] == "assistant":
        end += 1
    if end == n:
        return
    key = cur.prefix_hashes[end - 1]
    if key not in state.entries:
        readable = _seconds(prev.first_token_at) or _seconds(prev.started_at)
        state.entries[key] = CacheEntry(
            key, end - 1, cur.cum_tokens[end], "unit", expires, readable, prev.key
        )


def _longest_seen(state: CacheState, cur: RenderedRequest) -> int:
    """Units of the longest prefix of ``cur`` that an earlier request also sent."""
    lo, hi = 0, len(cur)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cur.prefix_hashes[mid - 1] in state.seen:
            lo = mid
        else:
            hi = mid - 1
    return lo
