"""The caches a provider fills without Anthropic's lookback (DESIGN §7): OpenAI, Gemini and DeepSeek.

Older OpenAI models and Gemini cache every prompt's prefixes on their own and read any shared prefix
in 128-token steps; OpenAI's GPT-5.6 family reads only an entry one of its breakpoints wrote, ending
exactly there; DeepSeek reads only a whole persisted prefix unit. All three share the miss labels of
:func:`automatic_label`.
"""

from __future__ import annotations

from projections.cache.predict.cache_models import (
    CacheEntry,
    CacheFacts,
    CacheState,
    CallInput,
    Prediction,
    entry_usable,
    material_reprocessing,
    openai_cached_tokens,
    seconds,
    unexplained_label,
)
from projections.cache.predict.materiality import is_material
from projections.cache.render.diff import shared_prefix_length
from projections.cache.render.rendered_request import RenderedRequest


def predict_automatic(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    """Automatic prefix caches (OpenAI, DeepSeek, Gemini): every request writes its whole prompt."""
    cur = call.rendered
    now = seconds(call.started_at)
    hashes = cur.prefix_hashes
    entries = state.entries
    lo, hi = 0, len(cur)  # the first lo units are held; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        entry = entries.get(hashes[mid - 1])
        if entry is not None and entry_usable(entry, now):
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
    readable = seconds(call.first_token_at) or now
    for i, key in enumerate(hashes):
        entry = entries.get(key)
        if entry is not None and entry_usable(entry, now):
            entry.expires_at = expires
        else:
            entries[key] = CacheEntry(key, i, cur.cum_tokens[i + 1], "auto", expires, readable, call.key)
    reprocessed, material = material_reprocessing(call, prev, read, label)
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
    if last is not None and not entry_usable(last, now):
        return "ttl-expired", f"the prompt of {last.writer} is no longer retained"
    return unexplained_label(call, read)


def _longest_entry(state: CacheState, cur: RenderedRequest, now: float | None) -> int:
    """Units of the longest prefix of ``cur`` that is a usable entry as a whole (0 for none).

    For caches that match whole stored prefixes only, not any shared prefix: the prefix hashes are
    walked from the end, so the first hit is the longest.
    """
    entries = state.entries
    hashes = cur.prefix_hashes
    for p in range(len(hashes) - 1, -1, -1):
        entry = entries.get(hashes[p])
        if entry is not None and entry.position == p and entry_usable(entry, now):
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


def predict_openai_breakpoints(
    state: CacheState, call: CallInput, prev: CallInput | None, facts: CacheFacts
) -> Prediction:
    """GPT-5.6 and later: a read matches an entry an earlier breakpoint wrote, exactly at its end.

    Unlike older OpenAI models there is no fallback to a shorter prefix and no 128-token rounding:
    a prompt that shares 9,000 tokens with the last one but whose breakpoints sit elsewhere reads
    nothing. Writes are the tokens past the read up to the furthest breakpoint not already held,
    reported as ``cache_write_tokens`` and billed at 1.25x input.
    """
    cur = call.rendered
    now = seconds(call.started_at)
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
    readable = seconds(call.first_token_at) or now
    for p, ttl in points:
        key = cur.prefix_hashes[p]
        expires = now + facts.lifetime(ttl) if now is not None else None
        entry = state.entries.get(key)
        if entry is not None and entry_usable(entry, now):
            entry.expires_at = (
                expires if expires is None or entry.expires_at is None else max(expires, entry.expires_at)
            )
        else:
            state.entries[key] = CacheEntry(key, p, cur.prefix_tokens(p), ttl, expires, readable, call.key)
    reprocessed, material = material_reprocessing(call, prev, read, label)
    return Prediction(read, write, 0, label, detail, material, reprocessed, read_from)


# --- DeepSeek: whole cache prefix units ------------------------------------------------------------


def predict_units(
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
    now = seconds(call.started_at)
    expires = now + facts.retention_seconds if now is not None else None
    readable = seconds(call.first_token_at) or now
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
    reprocessed, material = material_reprocessing(call, prev, read, label)
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
        readable = seconds(prev.first_token_at) or seconds(prev.started_at)
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
