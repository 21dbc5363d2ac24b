"""How each provider's caching scheme stores and finds prompt prefixes: the :data:`MECHANICS` table.

One row per scheme: breakpoints a request may write, the lookback of a read, the step in which
cached prefixes are counted, the lifetimes a request may name, the request parameters that key the
cache and the usage fields that report it. A provider may run several schemes (OpenAI's GPT-5.6
family caches at breakpoints, its older models by 128-token steps); which model uses which scheme
is the per-family table of :mod:`projections.providers.rules`.

Every figure, here and in the model rules, carries a :class:`Source`: the page it was read from and
the day it was checked. ``basis="docs"`` means the figure was read in that page (or in a dated
excerpt quoting it); ``basis="change-note"`` means the stored pages did not cover a 2026 change, and
the figure follows the written description of that change, pointing at the page that should hold it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import Final, Literal

CHECKED: Final = date(2026, 12, 3)
"""The day every source here and in :mod:`projections.providers.rules` was last checked."""

Provider = Literal["anthropic", "openai", "deepseek", "gemini"]
Scheme = Literal[
    "anthropic-breakpoints", "openai-prefix", "openai-breakpoints", "deepseek-units", "gemini-implicit"
]
Basis = Literal["docs", "change-note"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a figure was read and when."""

    url: str
    checked: date = CHECKED
    basis: Basis = "docs"
    note: str = ""


@dataclass(frozen=True, slots=True)
class Mechanics:
    """How one caching scheme stores and finds prefixes."""

    scheme: Scheme
    provider: Provider
    platforms: frozenset[str]
    writes_per_request: int
    """Breakpoints a request may write; 0 where the provider decides alone."""
    lookback: int
    """Block positions a read searches back from each breakpoint; 0 for no limit or no breakpoints."""
    granularity: int
    """Cached prefixes are counted in steps of this many tokens after the minimum (1 = exact)."""
    lifetimes: Mapping[str, int]
    """Cache lifetime in seconds by the name the request uses for it (``5m``, ``24h``, ...)."""
    default_lifetime: str
    key_params: tuple[str, ...]
    """Request parameters besides the prompt that key the cache."""
    usage_fields: tuple[str, ...]
    source: Source


# The caching guide of each provider, which the model rules cite as well.
ANTHROPIC_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
OPENAI_CACHING = "https://developers.openai.com/api/docs/guides/prompt-caching"
GEMINI_CACHING = "https://ai.google.dev/gemini-api/docs/caching"
DEEPSEEK_CACHING = "https://api-docs.deepseek.com/guides/kv_cache"

_ANTHROPIC_PLATFORMS = frozenset({"anthropic", "bedrock", "vertex", "openrouter"})
_OPENAI_PLATFORMS = frozenset({"openai", "azure", "openrouter"})


MECHANICS: Final[Mapping[Scheme, Mechanics]] = MappingProxyType(
    {
        # Up to 4 breakpoints; a read looks back at most 20 block positions from each breakpoint (a
        # run of consecutive tool_use blocks is one position, as is a run of tool_result blocks);
        # 5-minute lifetime refreshed by each read, or 1 hour with ttl "1h".
        "anthropic-breakpoints": Mechanics(
            scheme="anthropic-breakpoints",
            provider="anthropic",
            platforms=_ANTHROPIC_PLATFORMS,
            writes_per_request=4,
            lookback=20,
            granularity=1,
            lifetimes=MappingProxyType({"5m": 300, "1h": 3600}),
            default_lifetime="5m",
            key_params=(
                "tools",
                "tool_choice",
                "thinking",
                "output_config.effort",
                "speed",
                "output_config.format",
                "images present",
                "web search",
                "citations",
            ),
            usage_fields=(
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
                "cache_creation.ephemeral_5m_input_tokens",
                "cache_creation.ephemeral_1h_input_tokens",
            ),
            source=Source(ANTHROPIC_CACHING, note="'Cache limitations', 'What invalidates the cache'"),
        ),
        # Before GPT-5.6: automatic on prompts of 1,024 tokens or more, hits in 128-token steps,
        # kept 5-10 minutes of inactivity (at most an hour) in memory, or 24 h with
        # prompt_cache_retention "24h".
        "openai-prefix": Mechanics(
            scheme="openai-prefix",
            provider="openai",
            platforms=_OPENAI_PLATFORMS,
            writes_per_request=0,
            lookback=0,
            granularity=128,
            lifetimes=MappingProxyType({"in_memory": 600, "24h": 86_400}),
            default_lifetime="in_memory",
            key_params=("prompt_cache_key", "tools", "images"),
            usage_fields=("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens"),
            source=Source(OPENAI_CACHING, note="'How it works', 'Prompt cache retention'"),
        ),
        # GPT-5.6 and later: a request writes up to four breakpoints (the implicit one, at the end of
        # the newest user or tool message, takes one unless prompt_cache_options.mode is
        # "explicit"); a hit matches an earlier breakpoint exactly, with no fallback to a shorter
        # prefix and no block lookback limit (the latest 80 breakpoints are considered); ttl "30m".
        "openai-breakpoints": Mechanics(
            scheme="openai-breakpoints",
            provider="openai",
            platforms=_OPENAI_PLATFORMS,
            writes_per_request=4,
            lookback=0,
            granularity=1,
            lifetimes=MappingProxyType({"30m": 1800, "12h": 43_200}),
            default_lifetime="30m",
            key_params=("prompt_cache_key", "tools", "images"),
            usage_fields=(
                "prompt_tokens_details.cached_tokens",
                "prompt_tokens_details.cache_write_tokens",
                "input_tokens_details.cached_tokens",
                "input_tokens_details.cache_write_tokens",
            ),
            source=Source(
                OPENAI_CACHING,
                note="'prompt cache breakpoints'; the 80-breakpoint window and the 30m ttl are from "
                "the API reference of prompt_cache_options; '12h' is Azure's",
            ),
        ),
        # Every request persists a cache prefix unit at the end of its input and one at the end of
        # its output; a common prefix seen across requests is persisted as a unit of its own; a hit
        # must match a whole unit.
        "deepseek-units": Mechanics(
            scheme="deepseek-units",
            provider="deepseek",
            platforms=frozenset({"deepseek", "openrouter"}),
            writes_per_request=0,
            lookback=0,
            granularity=1,
            lifetimes=MappingProxyType({"disk": 3600}),
            default_lifetime="disk",
            key_params=(),
            usage_fields=("prompt_cache_hit_tokens", "prompt_cache_miss_tokens"),
            source=Source(
                DEEPSEEK_CACHING,
                note="'Cache Persistence and Hit Rules'; the page gives no lifetime, "
                "1 h is the engine's estimate",
            ),
        ),
        "gemini-implicit": Mechanics(
            scheme="gemini-implicit",
            provider="gemini",
            platforms=frozenset({"gemini", "vertex", "openrouter"}),
            writes_per_request=0,
            lookback=0,
            granularity=1,
            lifetimes=MappingProxyType({"implicit": 600}),
            default_lifetime="implicit",
            key_params=(),
            usage_fields=("usage.total_cached_tokens", "usageMetadata.cachedContentTokenCount"),
            source=Source(
                GEMINI_CACHING,
                note="hits in usage.total_cached_tokens (usageMetadata.cachedContentTokenCount before); "
                "no lifetime stated, 10 minutes is the engine's estimate",
            ),
        ),
    }
)


TTL_SECONDS: Final[Mapping[str, int]] = MappingProxyType(
    {**MECHANICS["anthropic-breakpoints"].lifetimes, **MECHANICS["openai-breakpoints"].lifetimes}
)
"""Lifetime of a breakpoint's entry by the ttl it names: Anthropic's ``5m`` and ``1h``, refreshed by
every read (prompt caching docs, "Cache lifetime"), and OpenAI's ``30m`` and ``12h``. The one home of
these figures: the predictors, the diff, the transcript rule and the wasted-writes count read them."""
