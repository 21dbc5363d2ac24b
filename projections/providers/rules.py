"""What each provider does with a model's prompt: one dated table of caching rules and windows.

:data:`MODEL_RULES` has one row per model family: its caching scheme (how the scheme works is the
:data:`~projections.providers.mechanics.MECHANICS` table), minimum cacheable prefix, write and read
price multipliers, context window, and the day from which the row holds. Rows are tried in order
and the first whose pattern matches the start of the bare model id wins, so a specific family sits
above the broader one it belongs to.

Every figure carries a :class:`~projections.providers.mechanics.Source`: the page it was read from and
the day it was checked. The predictor (:mod:`projections.cache.predict.cache_models`) and the window lookup
(:mod:`projections.providers.model_windows`) both read this module, so a model's facts live in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from types import MappingProxyType
from typing import Final, Literal

from projections.providers.mechanics import (
    ANTHROPIC_CACHING,
    DEEPSEEK_CACHING,
    GEMINI_CACHING,
    MECHANICS,
    OPENAI_CACHING,
    Mechanics,
    Provider,
    Scheme,
    Source,
)

LONG_CONTEXT_SUFFIX: Final = "[1m]"
"""The model-id suffix Claude Code uses for a 1M-token window."""


@dataclass(frozen=True, slots=True)
class ModelRule:
    """The caching and window facts of one model family, each with its source."""

    provider: Provider
    family: str
    pattern: str
    """A regular expression matched at the start of the bare, lower-case model id."""
    scheme: Scheme
    minimum_tokens: int
    minimum_source: Source
    write_multipliers: Mapping[str, float]
    """Price of a cache write per lifetime, as a multiple of the uncached input price; empty: no fee."""
    read_multiplier: float | None
    """Price of a cache read as a multiple of the input price; ``None`` where it varies by model."""
    multipliers_source: Source
    window: int | None = None
    window_source: Source | None = None
    long_window: int | None = None
    """The window an explicit long-context request gets (the 1M beta), when the family has one."""
    host_windows: tuple[tuple[str, int], ...] = ()
    """Hosts that run the family with a smaller window unless asked for the long one."""
    valid_from: date = date(2024, 1, 1)
    """The first day this row's cache figures hold; earlier requests fall to a later row."""
    thinking_kept: Literal["all", "last-turn"] = "all"
    """Which earlier thinking blocks a Claude model keeps in its prompt: all of them, or only those
    of the last assistant turn (the rest are stripped by the API, so they are no part of the prefix)."""

    def matches(self, model: str) -> bool:
        """Whether ``model`` (an API model id, any case, any provider prefix) belongs to this family."""
        return re.match(self.pattern, bare_model(model)) is not None

    @property
    def mechanics(self) -> Mechanics:
        """The caching scheme this family uses."""
        return MECHANICS[self.scheme]


def bare_model(model: str) -> str:
    """The model id without a provider prefix (``anthropic/``, Bedrock's ``us.anthropic.``) or ``[1m]``."""
    name = model.strip().lower().removesuffix(LONG_CONTEXT_SUFFIX)
    name = name.rsplit("/", 1)[-1]
    if "anthropic." in name:
        name = name.split("anthropic.", 1)[1]
    # Bedrock and Vertex spell versions with "@" or a ":0" tail.
    return re.sub(r"(@.*|-v\d+(:\d+)?)$", "", name)


# --- sources ----------------------------------------------------------------------------------------

_ANTHROPIC_PRICING = "https://platform.claude.com/docs/en/about-claude/pricing"
_ANTHROPIC_MODELS = "https://platform.claude.com/docs/en/models/overview"
_ANTHROPIC_CONTEXT = "https://platform.claude.com/docs/en/build-with-claude/context-windows"
_OPENAI_MODELS = "https://platform.openai.com/docs/models"
_GEMINI_MODELS = "https://ai.google.dev/gemini-api/docs/models"
_DEEPSEEK_PRICING = "https://api-docs.deepseek.com/quick_start/pricing"
_DEEPSEEK_V4 = "https://openrouter.ai/deepseek/deepseek-v4-flash"

# The minimums per Claude model, read 2026-12-03 as the table of the caching page ("512 Fable 5.1,
# Mythos 5.1, Opus 5.5, Opus 5, Fable 5, Mythos 5; 1,024 Opus 4.8, Sonnet 5, Sonnet 4.6, Sonnet 4.5,
# Opus 4.1, Opus 4, Sonnet 4; 2,048 Mythos Preview, Opus 4.7, Haiku 3.5; 4,096 Opus 4.6, Opus 4.5,
# Haiku 4.5"), which a 2026 docs audit quotes row by row.
_CLAUDE_MINIMUMS = Source(ANTHROPIC_CACHING, note="table 'Minimum cacheable prompt length'")
# "5m Cache Writes $3.75, 1h Cache Writes $6, Cache Hits $0.30" against $3 base input (Sonnet):
# 1.25x, 2x and 0.1x; Opus 5.5 reads at 0.05x and Fable 5.1 / Mythos 5.1 at 0.025x (footnotes).
_CLAUDE_PRICES = Source(_ANTHROPIC_PRICING, note="prompt caching price table and its footnotes")
_CLAUDE_WINDOWS = Source(_ANTHROPIC_MODELS, note="'Context window' on each model page")
_ANTHROPIC_THINKING = "https://platform.claude.com/docs/en/build-with-claude/extended-thinking"
THINKING_SOURCE: Final = Source(
    _ANTHROPIC_THINKING,
    note="'Opus 4.5 and later keep all prior thinking blocks; Opus 4.1 and earlier keep only the last "
    "assistant turn's thinking; Sonnet 4.6 and later keep all, Sonnet 4.5 and earlier the last turn; "
    "all Haiku models through Haiku 4.5 keep only the last turn'",
)
_CLAUDE_CODE_WINDOW = "https://github.com/anthropics/claude-code/issues/24208"

_OPENAI_56 = Source(
    OPENAI_CACHING,
    note="'For GPT-5.6 models and later model families, cache writes cost 1.25x the uncached input "
    "token rate'; reads 0.1x the input rate",
)
_OPENAI_56_MINIMUM = Source(
    OPENAI_CACHING,
    basis="change-note",
    note="the stored guide states 1,024 tokens for automatic caching and no separate GPT-5.6 minimum",
)
_OPENAI_PREFIX = Source(
    OPENAI_CACHING,
    note="'Cache writes have no additional fee on models before the GPT-5.6 family'; "
    "the read discount varies by model",
)
_OPENAI_MINIMUM = Source(
    OPENAI_CACHING, note="'enabled automatically for prompts that are 1024 tokens or longer'"
)
_OPENAI_WINDOWS = Source(_OPENAI_MODELS, note="model pages under /docs/models/<id>")

_GEMINI_MINIMUMS = Source(
    GEMINI_CACHING, note="implicit caching 'Min token limit' table, last updated 2026-10-13"
)
_GEMINI_PRICES = Source(GEMINI_CACHING, basis="change-note", note="no multiplier stated on the caching page")
_GEMINI_WINDOWS = Source(_GEMINI_MODELS, note="'Input token limit 1,048,576' on each Gemini 2.x model page")

_DEEPSEEK_UNITS = Source(DEEPSEEK_CACHING, note="no minimum: a hit is a whole persisted cache prefix unit")
_DEEPSEEK_PRICES = Source(_DEEPSEEK_PRICING, note="hit and miss prices per model; no write fee")

_NO_WRITE_FEE: Mapping[str, float] = MappingProxyType({})
_CLAUDE_WRITES: Mapping[str, float] = MappingProxyType({"5m": 1.25, "1h": 2.0})
_OPENAI_56_WRITES: Mapping[str, float] = MappingProxyType({"30m": 1.25, "12h": 1.25})


def _claude(
    family: str,
    pattern: str,
    minimum: int,
    window: int | None,
    *,
    read: float = 0.1,
    long_window: int | None = None,
    host_windows: tuple[tuple[str, int], ...] = (),
    window_source: Source = _CLAUDE_WINDOWS,
    valid_from: date = date(2024, 8, 14),
    thinking_kept: Literal["all", "last-turn"] = "all",
) -> ModelRule:
    return ModelRule(
        provider="anthropic",
        family=family,
        pattern=pattern,
        scheme="anthropic-breakpoints",
        minimum_tokens=minimum,
        minimum_source=_CLAUDE_MINIMUMS,
        write_multipliers=_CLAUDE_WRITES,
        read_multiplier=read,
        multipliers_source=_CLAUDE_PRICES,
        window=window,
        window_source=window_source if window is not None else None,
        long_window=long_window,
        host_windows=host_windows,
        valid_from=valid_from,
        thinking_kept=thinking_kept,
    )


def _openai(family: str, pattern: str, window: int | None, *, scheme: Scheme = "openai-prefix") -> ModelRule:
    newer = scheme == "openai-breakpoints"
    return ModelRule(
        provider="openai",
        family=family,
        pattern=pattern,
        scheme=scheme,
        minimum_tokens=1_024,
        minimum_source=_OPENAI_56_MINIMUM if newer else _OPENAI_MINIMUM,
        write_multipliers=_OPENAI_56_WRITES if newer else _NO_WRITE_FEE,
        read_multiplier=0.1 if newer else None,
        multipliers_source=_OPENAI_56 if newer else _OPENAI_PREFIX,
        window=window,
        window_source=_OPENAI_WINDOWS if window is not None else None,
        valid_from=date(2024, 10, 1),
    )


def _gemini(family: str, pattern: str, minimum: int, window: int | None) -> ModelRule:
    return ModelRule(
        provider="gemini",
        family=family,
        pattern=pattern,
        scheme="gemini-implicit",
        minimum_tokens=minimum,
        minimum_source=_GEMINI_MINIMUMS,
        write_multipliers=_NO_WRITE_FEE,
        read_multiplier=None,
        multipliers_source=_GEMINI_PRICES,
        window=window,
        window_source=_GEMINI_WINDOWS if window is not None else None,
        valid_from=date(2025, 5, 8),
    )


def _deepseek(family: str, pattern: str, window: int | None, window_source: Source | None) -> ModelRule:
    return ModelRule(
        provider="deepseek",
        family=family,
        pattern=pattern,
        scheme="deepseek-units",
        minimum_tokens=0,
        minimum_source=_DEEPSEEK_UNITS,
        write_multipliers=_NO_WRITE_FEE,
        read_multiplier=None,
        multipliers_source=_DEEPSEEK_PRICES,
        window=window,
        window_source=window_source,
        valid_from=date(2024, 8, 2),
    )


_1M = 1_000_000
_200K = 200_000
_CLAUDE_CODE_200K = (("claude-code", _200K),)
_CLAUDE_4X_MINIMUMS_FROM = date(2025, 10, 1)
"""Opus 4.5 and Haiku 4.5 came with the 4,096-token minimum; a request before it had 1,024."""

MODEL_RULES: Final[tuple[ModelRule, ...]] = (
    # --- Anthropic ---
    _claude("Claude Opus 5.5", r"claude-opus-5-5", 512, _1M, read=0.05),
    _claude("Claude Fable 5.1 and Mythos 5.1", r"claude-(fable|mythos)-5-1", 512, _1M, read=0.025),
    _claude("Claude Mythos Preview", r"claude-mythos-preview", 2_048, _1M),
    _claude("Claude 5 family (Opus 5, Fable 5, Mythos 5)", r"claude-(opus|fable|mythos)-5", 512, _1M),
    # Sonnet 5.5 reads at 0.05x since 2026-10-07 ($0.10 against $2 input); Sonnet 5 at 0.1x.
    _claude("Claude Sonnet 5.5", r"claude-sonnet-5-5", 1_024, _1M, read=0.05),
    _claude("Claude Sonnet 5", r"claude-sonnet-5", 1_024, _1M),
    # Opus 4.6 onward and Sonnet 4.6 serve 1M natively; Claude Code runs them at 200k unless its model
    # setting carries [1m] (its /context shows 200k for claude-opus-4-6, issue 24208, and the shared
    # Opus 4.6 transcript compacts at preTokens 170,251, the 200k auto-compact point).
    _claude(
        "Claude Opus 4.8", r"claude-opus-4-8", 1_024, _1M, long_window=_1M, host_windows=_CLAUDE_CODE_200K
    ),
    _claude(
        "Claude Opus 4.7", r"claude-opus-4-7", 2_048, _1M, long_window=_1M, host_windows=_CLAUDE_CODE_200K
    ),
    _claude(
        "Claude Opus 4.6",
        r"claude-opus-4-6",
        4_096,
        _1M,
        long_window=_1M,
        host_windows=_CLAUDE_CODE_200K,
        valid_from=_CLAUDE_4X_MINIMUMS_FROM,
    ),
    _claude(
        "Claude Sonnet 4.6", r"claude-sonnet-4-6", 1_024, _1M, long_window=_1M, host_windows=_CLAUDE_CODE_200K
    ),
    _claude(
        "Claude Haiku 4.5",
        r"claude-haiku-4-5",
        4_096,
        _200K,
        valid_from=_CLAUDE_4X_MINIMUMS_FROM,
        thinking_kept="last-turn",
    ),
    # Sonnet 4 and 4.5: 200k, or 1M with the context-1m beta header.
    _claude(
        "Claude Sonnet 4 and 4.5",
        r"claude-sonnet-4(-5)?(-\d{8})?$",
        1_024,
        _200K,
        long_window=_1M,
        window_source=Source(_ANTHROPIC_CONTEXT, note="1M with the context-1m-2025-08-07 beta header"),
        thinking_kept="last-turn",
    ),
    _claude(
        "Claude Opus 4.5", r"claude-opus-4-5(-\d{8})?$", 4_096, _200K, valid_from=_CLAUDE_4X_MINIMUMS_FROM
    ),
    _claude(
        "Claude Opus 4 and 4.1", r"claude-opus-4(-[01])?(-\d{8})?$", 1_024, _200K, thinking_kept="last-turn"
    ),
    _claude("Claude Haiku 3 and 3.5", r"claude-(3-5-haiku|3-haiku)", 2_048, _200K, thinking_kept="last-turn"),
    _claude("Claude 3.x (Sonnet 3.5 and 3.7, Opus 3)", r"claude-3", 1_024, _200K, thinking_kept="last-turn"),
    # Any other Claude model (and a model above before its row's date): the most common minimum.
    _claude("Other Claude models", r"claude", 1_024, None),
    # --- OpenAI ---
    _openai("GPT-5.6 and later", r"gpt-(5\.([6-9]|\d{2})|[6-9])", 1_050_000, scheme="openai-breakpoints"),
    _openai("GPT-5.4 and 5.5", r"gpt-5\.[45]", 1_050_000),
    _openai("GPT-5 to GPT-5.3", r"gpt-5", 400_000),
    _openai("GPT-4.1", r"gpt-4\.1", 1_047_576),
    _openai("GPT-4o", r"(chatgpt-)?gpt-4o", 128_000),
    _openai("o3 and o4-mini", r"o(3|4-mini)", 200_000),
    _openai("Other OpenAI models", r"(gpt|o\d|chatgpt|codex)", None),
    # --- Google ---
    _gemini("Gemini 2.5 (Flash, Pro)", r"gemini-2\.5", 2_048, 1_048_576),
    _gemini("Gemini 2.x", r"gemini-2\.", 2_048, 1_048_576),
    _gemini("Gemini 3 and later (3.x Flash, 3.1 Pro, 4)", r"gemini-([3-9]|\d{2})", 4_096, None),
    _gemini("Other Gemini models", r"gemini", 4_096, None),
    # --- DeepSeek ---
    # V4 (Flash, Pro): 1,048,576; the harness's own logs state 1,000,000 in request/context, which
    # wins where present. deepseek-chat and deepseek-reasoner (V3.2): 128K (64K before V3.1).
    _deepseek("DeepSeek V4 (Flash, Pro)", r"deepseek-v4", 1_048_576, Source(_DEEPSEEK_V4)),
    _deepseek(
        "DeepSeek V3.2 (chat, reasoner)", r"deepseek-(chat|reasoner)", 128_000, Source(_DEEPSEEK_PRICING)
    ),
    _deepseek("Other DeepSeek models", r"deepseek", None, None),
)


def model_rule(platform: str, model: str, on: date | None = None) -> ModelRule | None:
    """The first row for ``model`` served on ``platform`` that holds on ``on`` (default: any day)."""
    for rule in MODEL_RULES:
        if platform not in rule.mechanics.platforms or not rule.matches(model):
            continue
        if on is None or on >= rule.valid_from:
            return rule
    return None


def family_of(model: str) -> ModelRule | None:
    """The first row whose pattern matches ``model``, on any platform and day: the family a price
    table row named ``model`` prices, as the provider-rules page pairs them."""
    return next((rule for rule in MODEL_RULES if rule.matches(model)), None)


@lru_cache(maxsize=512)
def keeps_only_last_turn_thinking(model: str) -> bool:
    """Whether a Claude model strips the thinking blocks of earlier assistant turns from its prompt.

    Asked once per request rendered, of a handful of model ids: the answer is kept per id, since
    matching it against every row costs a request as much as naming its units."""
    for rule in MODEL_RULES:
        if rule.provider == "anthropic" and rule.matches(model):
            return rule.thinking_kept == "last-turn"
    return False


def rules_by_provider() -> dict[Provider, list[ModelRule]]:
    """The table grouped by provider, in table order, for display."""
    grouped: dict[Provider, list[ModelRule]] = {}
    for rule in MODEL_RULES:
        grouped.setdefault(rule.provider, []).append(rule)
    return grouped
