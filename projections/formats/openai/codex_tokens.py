"""Codex ``token_count`` events read into one usage per provider call.

The CLI writes ``{"type":"token_count","info":{"total_token_usage", "last_token_usage",
"model_context_window"}, "rate_limits"}`` after each Responses call completes
(``codex-rs/protocol/src/protocol.rs``: ``TokenCountEvent``, ``TokenUsageInfo``). ``last_token_usage``
is that call's usage as the API reported it and ``total_token_usage`` the running sum the CLI adds it
to, so the last usage is authoritative and the total tells a new call from a repeat: the CLI sends the
same info again when only the rate limits changed, and a repeat must not count twice. ``info`` is
null before the first call. When the context window overflows, the CLI fills the totals to the window
with a "last" usage that has a total and nothing else; that is a marker, not a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from projections.normalized import JSON, Usage
from projections.usage import UsageError, codex_usage

_COUNT_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


class TokenCountError(ValueError):
    """A ``token_count`` payload that cannot be read; ``field`` is its dotted path in the line."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


def _totals(usage: Mapping[str, JSON]) -> tuple[JSON, ...]:
    return tuple(usage.get(name) for name in _COUNT_FIELDS)


def _delta(total: Mapping[str, JSON], previous: Mapping[str, JSON] | None) -> dict[str, JSON]:
    """``total - previous`` field by field: the call's usage when a log has no ``last_token_usage``."""
    if previous is None:
        return dict(total)
    out: dict[str, JSON] = {}
    for name in _COUNT_FIELDS:
        now, before = total.get(name), previous.get(name)
        if isinstance(now, int) and isinstance(before, int) and now >= before:
            out[name] = now - before
        elif now is not None:
            out[name] = now
    return out


def _section(info: Mapping[str, JSON], key: str) -> Mapping[str, JSON] | None:
    value = info.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TokenCountError(f"payload.info.{key}", f"expected an object, got {type(value).__name__}")
    return value


@dataclass(slots=True)
class TokenCounter:
    """Follows a rollout's ``token_count`` events and names the ones that report a new call."""

    previous_total: Mapping[str, JSON] | None = None

    def call_usage(self, payload: Mapping[str, JSON]) -> Usage | None:
        """The usage of the call this event reports, or ``None`` for a repeat, a null info or a marker.

        Raises :class:`TokenCountError` naming the field when a count is not a count.
        """
        info = payload.get("info")
        if info is None:
            return None
        if not isinstance(info, Mapping):
            raise TokenCountError("payload.info", f"expected an object or null, got {type(info).__name__}")
        total = _section(info, "total_token_usage")
        last = _section(info, "last_token_usage")
        if total is None and last is None:
            return None
        if total is not None:
            if self.previous_total is not None and _totals(total) == _totals(self.previous_total):
                return None
            source = last if last else _delta(total, self.previous_total)
            key = "payload.info.last_token_usage" if last else "payload.info.total_token_usage"
            self.previous_total = total
        else:
            assert last is not None
            source, key = last, "payload.info.last_token_usage"
        try:
            usage = codex_usage(source)
        except UsageError as error:
            raise TokenCountError(f"{key}.{error.field}", error.reason) from None
        if not usage.prompt_total and not usage.output:
            return None  # the context-window-full marker: a total with no input and no output
        return usage
