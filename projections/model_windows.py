"""Context windows of the models a session talks to, and where a host compacts before the window ends.

A dated table: one :class:`WindowRule` per model family, each with the public page its figure comes
from and the day that page was checked. Rules are tried in order and the first whose pattern
matches the model id wins, so a specific family sits above the broader one it belongs to. The
table is meant to grow into per-provider rules (cache minimums, TTLs, price multipliers) with the
same shape: a frozen row, its source and its date.

Anthropic serves some models with a 1M-token window only on request: the API takes the
``context-1m-2025-08-07`` beta header, and Claude Code asks for it when its model setting carries a
``[1m]`` suffix (the transcript keeps the API's model id, without the suffix). A prompt larger
than the standard window proves the larger one was granted, so an observed prompt also decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Final

LONG_CONTEXT_BETA = "context-1m-2025-08-07"
"""The ``anthropic-beta`` value that asks for the 1M-token window."""

LONG_CONTEXT_SUFFIX = "[1m]"
"""The model-id suffix Claude Code uses for a 1M-token window."""

CHECKED = date(2026, 12, 3)

_ANTHROPIC_MODELS = "https://platform.claude.com/docs/en/models/overview"
_ANTHROPIC_CONTEXT = "https://platform.claude.com/docs/en/build-with-claude/context-windows"
_OPENAI_MODELS = "https://platform.openai.com/docs/models"
_GEMINI_MODELS = "https://ai.google.dev/gemini-api/docs/models"
_DEEPSEEK_PRICING = "https://api-docs.deepseek.com/quick_start/pricing"
_DEEPSEEK_V4 = "https://openrouter.ai/deepseek/deepseek-v4-flash"


@dataclass(frozen=True, slots=True)
class WindowRule:
    """The context window of one model family, with the page it comes from."""

    provider: str
    family: str
    """A readable name for the family (``Claude Sonnet 4.5``)."""
    pattern: str
    """A regular expression matched at the start of the lower-case model id."""
    window: int
    source: str
    checked: date
    long_window: int | None = None
    """The window an explicit long-context request gets (the 1M beta), when the family has one."""
    host_windows: tuple[tuple[str, int], ...] = ()
    """Hosts that give the family a smaller window unless asked for the long one: ``(host, window)``."""

    def matches(self, model: str) -> bool:
        """Whether ``model`` (an API model id, any case) belongs to this family."""
        return re.match(self.pattern, _bare(model)) is not None


def _rule(
    provider: str,
    family: str,
    pattern: str,
    window: int,
    source: str,
    *,
    long_window: int | None = None,
    host_windows: tuple[tuple[str, int], ...] = (),
) -> WindowRule:
    return WindowRule(provider, family, pattern, window, source, CHECKED, long_window, host_windows)


_1M = 1_000_000
_200K = 200_000

WINDOW_RULES: Final[tuple[WindowRule, ...]] = (
    # Anthropic. Opus 4.6 onward and Sonnet 4.6 onward serve 1M natively (model pages, e.g.
    # https://platform.claude.com/docs/en/models/opus-4-6/overview: "Context window: 1M tokens").
    # Claude Code runs the 4.6 to 4.8 models at 200k unless its model setting carries [1m]: its
    # /context shows 200k for claude-opus-4-6 (https://github.com/anthropics/claude-code/issues/24208),
    # and the shared Opus 4.6 transcript compacts at preTokens 170,251, at the 200k auto-compact point.
    _rule(
        "anthropic",
        "Claude Haiku 4.5 and older Haiku",
        r"claude-(haiku-4-5|3-5-haiku|3-haiku)",
        _200K,
        _ANTHROPIC_MODELS,
    ),
    _rule(
        "anthropic",
        "Claude Opus 4.6 to 4.8",
        r"claude-opus-4-[678]",
        _1M,
        _ANTHROPIC_MODELS,
        long_window=_1M,
        host_windows=(("claude-code", _200K),),
    ),
    _rule(
        "anthropic",
        "Claude Sonnet 4.6",
        r"claude-sonnet-4-6",
        _1M,
        _ANTHROPIC_MODELS,
        long_window=_1M,
        host_windows=(("claude-code", _200K),),
    ),
    _rule(
        "anthropic",
        "Claude 5 family (Opus, Sonnet, Fable)",
        r"claude-(opus|sonnet|fable)-5",
        _1M,
        _ANTHROPIC_MODELS,
    ),
    # Sonnet 4 and 4.5: 200k, or 1M with the context-1m beta header.
    _rule(
        "anthropic",
        "Claude Sonnet 4 and 4.5",
        r"claude-sonnet-4(-5)?(-\d{8})?$",
        _200K,
        _ANTHROPIC_CONTEXT,
        long_window=_1M,
    ),
    _rule("anthropic", "Claude Opus 4 to 4.5", r"claude-opus-4(-[015])?(-\d{8})?$", _200K, _ANTHROPIC_MODELS),
    _rule("anthropic", "Claude 3.x", r"claude-3", _200K, _ANTHROPIC_MODELS),
    # OpenAI (model pages under https://platform.openai.com/docs/models/<id>).
    _rule("openai", "GPT-5.4 and later GPT-5", r"gpt-5\.([4-9]|\d{2})", 1_050_000, _OPENAI_MODELS),
    _rule("openai", "GPT-5 to GPT-5.2", r"gpt-5", 400_000, _OPENAI_MODELS),
    _rule("openai", "GPT-4.1", r"gpt-4\.1", 1_047_576, _OPENAI_MODELS),
    _rule("openai", "GPT-4o", r"(chatgpt-)?gpt-4o", 128_000, _OPENAI_MODELS),
    _rule("openai", "o3 and o4-mini", r"o(3|4-mini)", 200_000, _OPENAI_MODELS),
    # Google: "Input token limit 1,048,576" on each Gemini 2.x model page.
    _rule("gemini", "Gemini 2.x", r"gemini-2\.", 1_048_576, _GEMINI_MODELS),
    # DeepSeek V4 (Flash, Pro): 1,048,576; the harness's own logs state 1,000,000 in request/context,
    # which wins where present. deepseek-chat and deepseek-reasoner (V3.2): 128K (64K before V3.1).
    _rule("deepseek", "DeepSeek V4 (Flash, Pro)", r"deepseek-v4", 1_048_576, _DEEPSEEK_V4),
    _rule(
        "deepseek", "DeepSeek V3.2 (chat, reasoner)", r"deepseek-(chat|reasoner)", 128_000, _DEEPSEEK_PRICING
    ),
)


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """The window found for a model, and why."""

    tokens: int
    reason: str
    """``model table``, ``[1m] suffix``, ``context-1m beta header``,
    or ``prompt above the standard window``."""
    rule: WindowRule | None


def _bare(model: str) -> str:
    """The model id without a provider prefix (``anthropic/``, Bedrock's ``us.anthropic.``) or ``[1m]``."""
    name = model.strip().lower().removesuffix(LONG_CONTEXT_SUFFIX)
    name = name.rsplit("/", 1)[-1]
    if "anthropic." in name:
        name = name.split("anthropic.", 1)[1]
    # Bedrock and Vertex spell versions with "@" or a ":0" tail.
    return re.sub(r"(@.*|-v\d+(:\d+)?)$", "", name)


def window_rule(model: str) -> WindowRule | None:
    """The first rule of :data:`WINDOW_RULES` that ``model`` matches, or ``None``."""
    for rule in WINDOW_RULES:
        if rule.matches(model):
            return rule
    return None


def context_window(
    model: str, *, betas: Iterable[str] = (), largest_prompt: int | None = None, host: str | None = None
) -> ContextWindow | None:
    """The context window of ``model``; ``None`` for a model the table does not know.

    ``betas`` are the request's ``anthropic-beta`` values; ``largest_prompt`` is the largest prompt
    the provider reported for this model in the session. Either can show the long-context window
    of a family that has one. ``host`` (:func:`host_of_format`) names the agent that sent the
    request, for a family that host runs with a smaller window.
    """
    rule = window_rule(model)
    if rule is None:
        return None
    standard = dict(rule.host_windows).get(host or "", rule.window)
    if rule.long_window is not None and rule.long_window > standard:
        if model.strip().lower().endswith(LONG_CONTEXT_SUFFIX):
            return ContextWindow(rule.long_window, "[1m] suffix", rule)
        if LONG_CONTEXT_BETA in set(betas):
            return ContextWindow(rule.long_window, "context-1m beta header", rule)
        if largest_prompt is not None and largest_prompt > standard:
            return ContextWindow(rule.long_window, "prompt above the standard window", rule)
    reason = "model table" if standard == rule.window else f"{host} default"
    return ContextWindow(standard, reason, rule)


# --- where a host compacts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AutoCompactRule:
    """Where a host compacts a conversation on its own: ``window - reserved - buffer`` tokens."""

    host: str
    reserved_for_summary: int
    """Tokens the host keeps free for the summary it writes."""
    buffer: int
    """Tokens below that at which it starts compacting."""
    sources: tuple[str, ...]
    checked: date

    def threshold(self, window: int) -> int:
        """The context size at which the host compacts, for a model of ``window`` tokens."""
        return max(0, window - self.reserved_for_summary - self.buffer)


CLAUDE_CODE_AUTO_COMPACT: Final = AutoCompactRule(
    host="claude-code",
    reserved_for_summary=20_000,
    buffer=13_000,
    # Both give 167k for a 200k window (83.5 %) and 967k for 1M; the second names the buffer
    # constant AUTOCOMPACT_BUFFER_TOKENS = 13,000.
    sources=(
        "https://github.com/sirmalloc/ccstatusline/pull/319",
        "https://zhanghandong.github.io/harness-engineering-from-cc-to-ai-coding/part3/compaction-viz.html",
    ),
    checked=CHECKED,
)

_AUTO_COMPACT_BY_FORMAT: Final = {
    "claude-code": CLAUDE_CODE_AUTO_COMPACT,
    # claude-trace records Claude Code's own traffic.
    "claude-trace": CLAUDE_CODE_AUTO_COMPACT,
}


def auto_compact_rule(log_format: str) -> AutoCompactRule | None:
    """The automatic-compaction rule of the host that writes ``log_format``, if it has one."""
    return _AUTO_COMPACT_BY_FORMAT.get(log_format)


def host_of_format(log_format: str) -> str | None:
    """The agent host whose traffic a log format records, where the window rules know it."""
    rule = _AUTO_COMPACT_BY_FORMAT.get(log_format)
    return rule.host if rule is not None else None
