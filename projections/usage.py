"""Provider usage blocks normalized into exclusive buckets (DESIGN §3, §7).

Anthropic and dsh report cache tokens beside the uncached input count; OpenAI (Chat and Responses),
Gemini, DeepSeek and OpenRouter include them in the prompt count. Every function here returns a
:class:`Usage` whose buckets are disjoint, keeps the provider's own fields in ``raw``, and leaves a
bucket ``None`` when the provider did not report it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from projections.normalized import JSON, Usage


class UsageError(ValueError):
    """A usage field that is not a non-negative integer; ``field`` names the provider's key."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


MAX_TOKEN_COUNT = 10**9
"""No provider call reports a billion tokens; a larger count is a corrupt log, refused before it can
overflow a database column or swamp every total it joins."""


def _count(raw: Mapping[str, JSON], key: str, prefix: str = "") -> int | None:
    """The non-negative integer at ``key`` (at most :data:`MAX_TOKEN_COUNT`), ``None`` when absent or null."""
    value = raw.get(key)
    name = prefix + key
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(name, f"expected a non-negative integer, got {value!r}")
    if value < 0:
        raise UsageError(name, f"expected a non-negative integer, got {value}")
    if value > MAX_TOKEN_COUNT:
        raise UsageError(name, f"an absurd count {value} (more than {MAX_TOKEN_COUNT:,} tokens in one call)")
    return int(value)


def _section(raw: Mapping[str, JSON], key: str) -> Mapping[str, JSON]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(key, f"expected an object, got {type(value).__name__}")
    return value


def _mapping(raw: JSON, what: str) -> Mapping[str, JSON]:
    if not isinstance(raw, Mapping):
        raise UsageError(what, f"expected an object, got {type(raw).__name__}")
    return raw


def _minus(total: int | None, part: int | None, field: str) -> int | None:
    """``total - part`` for providers that include ``part`` in ``total``; refuses a negative rest."""
    if total is None:
        return None
    rest = total - (part or 0)
    if rest < 0:
        raise UsageError(field, f"cached tokens {part} exceed the prompt count {total}")
    return rest


def anthropic_usage(raw: JSON) -> Usage:
    """Anthropic Messages usage: ``input_tokens`` is exclusive of the cache buckets.

    ``cache_creation`` splits the write into ``ephemeral_5m_input_tokens`` and
    ``ephemeral_1h_input_tokens``; without it every write counts as 5-minute (the default TTL) and
    the 1-hour bucket is unreported.
    """
    usage = _mapping(raw, "usage")
    written = _count(usage, "cache_creation_input_tokens")
    split = _section(usage, "cache_creation")
    write_5m = _count(split, "ephemeral_5m_input_tokens", "cache_creation.")
    write_1h = _count(split, "ephemeral_1h_input_tokens", "cache_creation.")
    if write_5m is None and write_1h is None:
        write_5m = written
    elif written is not None and (write_5m or 0) + (write_1h or 0) != written:
        # An old split that does not add up: trust the total, keep the 1-hour share it names.
        write_5m = _minus(written, write_1h, "cache_creation.ephemeral_1h_input_tokens")
    return Usage(
        uncached_input=_count(usage, "input_tokens"),
        cache_read=_count(usage, "cache_read_input_tokens"),
        cache_write_5m=write_5m,
        cache_write_1h=write_1h,
        output=_count(usage, "output_tokens"),
        convention="anthropic",
        raw=dict(usage),
    )


def _openai_split(usage: Mapping[str, JSON], prompt_key: str, details_key: str) -> tuple[int | None, ...]:
    """(uncached, read, write) of an OpenAI prompt whose details name ``cached_tokens`` and, from the
    GPT-5.6 family on, ``cache_write_tokens``; both are inside the prompt count (prompt-caching
    guide, developers.openai.com/api/docs/guides/prompt-caching, checked 2026-12-03: "OpenAI reports
    writes in cache_write_tokens and reads in cached_tokens")."""
    prompt = _count(usage, prompt_key)
    details = _section(usage, details_key)
    cached = _count(details, "cached_tokens", f"{details_key}.")
    written = _count(details, "cache_write_tokens", f"{details_key}.")
    uncached = _minus(prompt, (cached or 0) + (written or 0), f"{details_key}.cached_tokens")
    return uncached, cached, written


def openai_chat_usage(raw: JSON) -> Usage:
    """OpenAI Chat Completions usage: ``prompt_tokens_details.cached_tokens`` and
    ``cache_write_tokens`` are inside ``prompt_tokens``; a write lives for the request's TTL."""
    usage = _mapping(raw, "usage")
    uncached, cached, written = _openai_split(usage, "prompt_tokens", "prompt_tokens_details")
    return Usage(
        uncached_input=uncached,
        cache_read=cached,
        cache_write_5m=written,
        cache_write_1h=None,
        output=_count(usage, "completion_tokens"),
        convention="openai",
        raw=dict(usage),
    )


def openai_responses_usage(raw: JSON) -> Usage:
    """OpenAI Responses usage: ``input_tokens_details.cached_tokens`` and ``cache_write_tokens`` are
    inside ``input_tokens``."""
    usage = _mapping(raw, "usage")
    uncached, cached, written = _openai_split(usage, "input_tokens", "input_tokens_details")
    return Usage(
        uncached_input=uncached,
        cache_read=cached,
        cache_write_5m=written,
        cache_write_1h=None,
        output=_count(usage, "output_tokens"),
        convention="openai",
        raw=dict(usage),
    )


def gemini_usage(raw: JSON) -> Usage:
    """Gemini ``usageMetadata`` (or a response holding it): cached tokens are inside ``promptTokenCount``.

    Thinking tokens are billed as output, so ``thoughtsTokenCount`` joins ``candidatesTokenCount``.
    """
    usage = _mapping(raw, "usageMetadata")
    if "usageMetadata" in usage:
        usage = _section(usage, "usageMetadata")
    elif isinstance(usage.get("usage"), dict) or "total_cached_tokens" in usage:
        return _gemini_interactions_usage(usage)
    prompt = _count(usage, "promptTokenCount")
    cached = _count(usage, "cachedContentTokenCount")
    candidates = _count(usage, "candidatesTokenCount")
    thoughts = _count(usage, "thoughtsTokenCount")
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    return Usage(
        uncached_input=_minus(prompt, cached, "cachedContentTokenCount"),
        cache_read=cached,
        cache_write_5m=None,
        cache_write_1h=None,
        output=output,
        convention="gemini",
        raw=dict(usage),
    )


def _gemini_interactions_usage(raw: Mapping[str, JSON]) -> Usage:
    """The ``usage`` object of Gemini's 2026 API: hits in ``usage.total_cached_tokens`` (caching
    guide, ai.google.dev/gemini-api/docs/caching, checked 2026-12-03), inside ``total_input_tokens``."""
    usage = _section(raw, "usage") if isinstance(raw.get("usage"), dict) else raw
    cached = _count(usage, "total_cached_tokens")
    outputs = [_count(usage, "total_output_tokens"), _count(usage, "total_thought_tokens")]
    output = None if all(part is None for part in outputs) else sum(part or 0 for part in outputs)
    return Usage(
        uncached_input=_minus(_count(usage, "total_input_tokens"), cached, "total_cached_tokens"),
        cache_read=cached,
        cache_write_5m=None,
        cache_write_1h=None,
        output=output,
        convention="gemini",
        raw=dict(usage),
    )


def deepseek_usage(raw: JSON) -> Usage:
    """DeepSeek usage: ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens`` = ``prompt_tokens``."""
    usage = _mapping(raw, "usage")
    hit = _count(usage, "prompt_cache_hit_tokens")
    miss = _count(usage, "prompt_cache_miss_tokens")
    if miss is None:
        miss = _minus(_count(usage, "prompt_tokens"), hit, "prompt_cache_hit_tokens")
    return Usage(
        uncached_input=miss,
        cache_read=hit,
        cache_write_5m=None,
        cache_write_1h=None,
        output=_count(usage, "completion_tokens"),
        convention="deepseek",
        raw=dict(usage),
    )


def openrouter_usage(raw: JSON) -> Usage:
    """OpenRouter usage: cached reads and cache writes are both inside ``prompt_tokens``.

    ``cache_write_tokens`` sits in ``prompt_tokens_details``; some responses put it at the top level.
    """
    usage = _mapping(raw, "usage")
    details = _section(usage, "prompt_tokens_details")
    prompt = _count(usage, "prompt_tokens")
    cached = _count(details, "cached_tokens", "prompt_tokens_details.")
    written = _count(details, "cache_write_tokens", "prompt_tokens_details.")
    if written is None:
        written = _count(usage, "cache_write_tokens")
    uncached = _minus(prompt, (cached or 0) + (written or 0), "prompt_tokens_details.cached_tokens")
    return Usage(
        uncached_input=uncached,
        cache_read=cached,
        cache_write_5m=written,
        cache_write_1h=None,
        output=_count(usage, "completion_tokens"),
        convention="openrouter",
        raw=dict(usage),
    )


def codex_usage(raw: JSON) -> Usage:
    """Codex CLI ``TokenUsage`` (a rollout's ``token_count``): reads and writes are inside ``input_tokens``.

    ``cached_input_tokens`` is the read; ``cache_write_input_tokens`` (newer releases only, so an
    older log leaves the write bucket unreported) is the write. ``reasoning_output_tokens`` is a share
    of ``output_tokens`` and stays in ``raw`` with the other fields.
    """
    usage = _mapping(raw, "usage")
    prompt = _count(usage, "input_tokens")
    cached = _count(usage, "cached_input_tokens")
    written = _count(usage, "cache_write_input_tokens")
    output = _count(usage, "output_tokens")
    reasoning = _count(usage, "reasoning_output_tokens")
    _count(usage, "total_tokens")
    if reasoning is not None and output is not None and reasoning > output:
        raise UsageError("reasoning_output_tokens", f"{reasoning} exceeds output_tokens {output}")
    return Usage(
        uncached_input=_minus(prompt, (cached or 0) + (written or 0), "cached_input_tokens"),
        cache_read=cached,
        cache_write_5m=written,
        cache_write_1h=None,
        output=output,
        convention="openai",
        raw=dict(usage),
    )


def dsh_usage(raw: JSON) -> Usage:
    """dsh ``assistant/message`` usage: disjoint buckets; ``cacheWrite1hTokens`` is a share of the writes."""
    usage = _mapping(raw, "usage")
    written = _count(usage, "cacheWriteTokens")
    write_1h = _count(usage, "cacheWrite1hTokens")
    return Usage(
        uncached_input=_count(usage, "inputTokens"),
        cache_read=_count(usage, "cacheReadTokens"),
        cache_write_5m=_minus(written, write_1h, "cacheWrite1hTokens"),
        cache_write_1h=write_1h,
        output=_count(usage, "outputTokens"),
        convention="dsh",
        raw=dict(usage),
    )


NORMALIZERS: Mapping[str, Callable[[JSON], Usage]] = {
    "anthropic": anthropic_usage,
    "openai": openai_chat_usage,
    "openai-responses": openai_responses_usage,
    "gemini": gemini_usage,
    "deepseek": deepseek_usage,
    "openrouter": openrouter_usage,
    "dsh": dsh_usage,
    "codex": codex_usage,
}
"""Normalizer by source shape; ``openai`` is Chat Completions, ``openai-responses`` the Responses API,
``codex`` the Codex CLI's own count of a Responses call."""


def normalize_usage(shape: str, raw: JSON) -> Usage:
    """Normalize ``raw`` reported in ``shape`` (a key of :data:`NORMALIZERS`)."""
    try:
        normalizer = NORMALIZERS[shape]
    except KeyError:
        raise UsageError("convention", f"unknown usage shape {shape!r}") from None
    return normalizer(raw)


def usage_to_dsh(usage: Usage) -> dict[str, int]:
    """The dsh spelling of ``usage`` (``inputTokens``, ``cacheReadTokens``, ...), reported buckets only."""
    pairs: tuple[tuple[str, int | None], ...] = (
        ("inputTokens", usage.uncached_input),
        ("cacheReadTokens", usage.cache_read),
        ("cacheWriteTokens", usage.cache_write),
        ("cacheWrite1hTokens", usage.cache_write_1h),
        ("outputTokens", usage.output),
    )
    return {key: value for key, value in pairs if value is not None}
