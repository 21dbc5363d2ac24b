"""Anthropic's breakpoint cache predicted for one request (DESIGN §7).

A request writes an entry at each ``cache_control`` breakpoint and reads the longest entry found at
or before one of its breakpoints within the lookback of 20 block positions. The miss label names the
first rule that explains a read smaller than the prompt: no breakpoint, a prefix below the minimum,
a model or prefix change, an entry expired, not yet readable or beyond the lookback.
"""

from __future__ import annotations

from projections.cache.predict.cache_models import (
    TTL_SECONDS,
    CacheEntry,
    CacheFacts,
    CacheState,
    CallInput,
    Prediction,
    entry_usable,
    material_reprocessing,
    seconds,
    split_writes,
    unexplained_label,
)
from projections.cache.predict.idle_gap import idle_text
from projections.cache.render.diff import shared_prefix_length
from projections.cache.render.rendered_request import RenderedRequest


def predict_anthropic(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts, *, labels: bool = True
) -> Prediction:
    """Read the longest usable entry within each breakpoint's lookback, write at every breakpoint.

    ``labels=False`` leaves the miss label out (a what-if replay needs only the figures): finding
    why a read fell short looks at every entry held, which dominates a long session's replay.
    """
    cur = call.rendered
    now = seconds(call.started_at)
    markers = cur.markers
    groups, hashes = cur.lookback_groups, cur.prefix_hashes
    best: CacheEntry | None = None
    for marker in markers:
        group = groups[marker.position]
        p = marker.position
        while p >= 0 and group - groups[p] < facts.lookback:
            entry = state.entries.get(hashes[p])
            if entry is not None and entry.position == p and entry_usable(entry, now):
                if best is None or entry.tokens > best.tokens:
                    best = entry
                # Prefixes only shrink further back: nothing behind this one is longer.
                break
            p -= 1
    read = best.tokens if best is not None else 0
    bps = [(cur.prefix_tokens(m.position), m.ttl) for m in markers]
    write_5m, write_1h = split_writes(read, bps, facts.minimum_tokens)
    label, detail, idle = None, "", None
    if labels:
        blocked = _blocked_entries(state, cur, read, now, facts)
        label, detail = _anthropic_label(call, prev, facts, read, blocked)
        if label == "ttl-expired":
            idle = _idle_seconds(blocked, now)
            if idle is not None:
                detail += f" after {idle_text(idle)} without a read"
    if best is not None and now is not None:
        best.expires_at = now + TTL_SECONDS[best.ttl]
    _write_entries(state, call, facts, now)
    reprocessed, material = material_reprocessing(call, prev, read, label)
    writer = best.writer if best else None
    return Prediction(read, write_5m, write_1h, label, detail, material, reprocessed, writer, idle)


def _idle_seconds(blocked: list[tuple[str, CacheEntry]], now: float | None) -> float | None:
    """Seconds between the last use of the expired entry the label names and ``now``: its expiry
    less its lifetime is when it was last written or read."""
    entry = next((entry for reason, entry in blocked if reason == "ttl-expired"), None)
    if entry is None or entry.expires_at is None or now is None:
        return None
    return now - (entry.expires_at - TTL_SECONDS[entry.ttl])


def _write_entries(state: CacheState, call: CallInput, facts: CacheFacts, now: float | None) -> None:
    cur = call.rendered
    readable = seconds(call.first_token_at)
    if readable is None:
        readable = now
    for marker in cur.markers:
        tokens = cur.prefix_tokens(marker.position)
        if tokens < facts.minimum_tokens:
            continue
        key = cur.prefix_hashes[marker.position]
        expires = now + TTL_SECONDS[marker.ttl] if now is not None else None
        entry = state.entries.get(key)
        if entry is not None and entry_usable(entry, now):
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
    hashes, n, entries = cur.prefix_hashes, len(cur), state.entries
    # Only entries whose prefix this request repeats can be blocked: found by one set intersection
    # (in C) rather than a look at every entry held, which grows with the session.
    for key in entries.keys() & set(hashes):
        entry = entries[key]
        if entry.tokens <= read or entry.position >= n or hashes[entry.position] != entry.prefix_hash:
            continue
        if now is not None and entry.expires_at is not None and entry.expires_at <= now:
            found.append(("ttl-expired", entry))
        elif now is not None and entry.readable_at is not None and entry.readable_at > now:
            found.append(("concurrent", entry))
        elif facts.lookback:
            found.append(("beyond-lookback", entry))
    found.sort(key=lambda item: (-item[1].tokens, item[1].position))
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
    return unexplained_label(call, read)


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
