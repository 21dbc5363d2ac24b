"""Context windows of the models a session talks to, and where a host compacts before the window ends.

A dated table: one :class:`WindowRule` per model family, each with the public page its figure comes
from and the day that page was checked. Rules are tried in order and the first whose pattern
matches the model id wins, so a specific family sits above the broader one it belongs to. The
figures live in :mod:`projections.providers.rules`, beside each family's cache minimums, lifetimes
and price multipliers; this module reads their window column.

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
from functools import lru_cache
from typing import Final

from projections.providers import mechanics as cache_mechanics
from projections.providers import rules as provider_rules

LONG_CONTEXT_BETA = "context-1m-2025-08-07"
"""The ``anthropic-beta`` value that asks for the 1M-token window."""

LONG_CONTEXT_SUFFIX = provider_rules.LONG_CONTEXT_SUFFIX
"""The model-id suffix Claude Code uses for a 1M-token window."""

CHECKED = cache_mechanics.CHECKED


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


def _window_rule(rule: provider_rules.ModelRule) -> WindowRule | None:
    """The window part of a row of the provider rules, for a family whose window is known."""
    if rule.window is None or rule.window_source is None:
        return None
    return WindowRule(
        rule.provider,
        rule.family,
        rule.pattern,
        rule.window,
        rule.window_source.url,
        rule.window_source.checked,
        rule.long_window,
        rule.host_windows,
    )


# The windows live in the provider rules (projections.providers.rules), beside each family's caching
# figures, so a model's facts have one home; this is their window column, in the same order.
WINDOW_RULES: Final[tuple[WindowRule, ...]] = tuple(
    window for window in map(_window_rule, provider_rules.MODEL_RULES) if window is not None
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
    return provider_rules.bare_model(model)


@lru_cache(maxsize=256)
def window_rule(model: str) -> WindowRule | None:
    """The first rule of :data:`WINDOW_RULES` that ``model`` matches, or ``None``.

    Kept per model id: an ingest asks once a request, of a handful of ids, and each rule's match
    takes a few regular expressions.
    """
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
    # Claude Code's own telemetry events (projections.formats.otel.claude_code).
    "claude-code-otel": CLAUDE_CODE_AUTO_COMPACT,
}


def auto_compact_rule(log_format: str) -> AutoCompactRule | None:
    """The automatic-compaction rule of the host that writes ``log_format``, if it has one."""
    return _AUTO_COMPACT_BY_FORMAT.get(log_format)


def host_of_format(log_format: str) -> str | None:
    """The agent host whose traffic a log format records, where the window rules know it."""
    rule = _AUTO_COMPACT_BY_FORMAT.get(log_format)
    return rule.host if rule is not None else None
