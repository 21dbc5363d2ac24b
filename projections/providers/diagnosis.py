"""The provider's own diagnosis of a cache miss, read from its response, and whether it agrees with ours.

**Anthropic** (cache diagnostics, https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics,
GA; the ``cache-diagnosis-2026-04-07`` beta header of the beta is no longer needed): a request that
carries ``diagnostics: {previous_message_id}`` (``null`` on the first turn) is compared with the
request that answered as that id, and the response carries ``diagnostics: {cache_miss_reason:
{type, cache_missed_input_tokens}}``. ``type`` is one of ``model_changed``, ``system_changed``,
``tools_changed``, ``messages_changed`` (the first divergence, in that order of the prefix),
``previous_message_not_found`` or ``unavailable``; ``cache_missed_input_tokens`` is the estimate of the
tokens after the divergence, set only for the ``*_changed`` types. ``diagnostics`` is ``null`` when
nothing diverged (or nothing was asked), and ``cache_miss_reason`` is ``null`` while the comparison was
still running when the response was written. A stream states it in ``message_start``'s message.

**OpenAI** (prompt cache diagnostics, Responses API, GPT-5.6 and later,
https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics): a request with
``prompt_cache_options.comparison_response_id`` gets ``prompt_cache_diagnostics`` on its response:
``{type: cache_hit | cache_miss | comparison_response_not_found | unavailable}``, a miss adding
``reason`` (``model_changed``, ``prompt_cache_key_changed``, ``tools_changed``, ``text_format_changed``,
``reasoning_effort_changed``, ``verbosity_changed``, ``context_compacted``, ``input_changed``,
``service_tier_changed``), ``cache_missed_tokens`` and ``comparison_reusable_tokens``. A stream states
it on ``response.completed``'s response.

Both compare the request's structure with an earlier one, independent of whether the cache read:
that is the same question as the engine's first change, asked of the provider's own fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_MISSED_TOKENS = 10**9
"""The largest stated miss count kept: usage's own bound on a call's tokens (``usage.MAX_TOKEN_COUNT``),
repeated here because the usage module imports this one's dependants."""

ANTHROPIC_REASON_TIERS: Mapping[str, frozenset[str]] = {
    "model_changed": frozenset({"model"}),
    "system_changed": frozenset({"system"}),
    "tools_changed": frozenset({"tools"}),
    "messages_changed": frozenset({"messages"}),
}
"""The prefix tier each Anthropic reason names; a reason not listed names no tier."""

OPENAI_REASON_TIERS: Mapping[str, frozenset[str]] = {
    "model_changed": frozenset({"model"}),
    "tools_changed": frozenset({"tools"}),
    # The Responses input holds the instructions and the items: either tier of ours is that change.
    "input_changed": frozenset({"system", "messages"}),
}
"""The prefix tiers each OpenAI miss reason names. Settings reasons (prompt cache key, text format,
reasoning effort, verbosity, service tier) and ``context_compacted`` name no tier of ours."""

UNCOMPARABLE = frozenset({"previous_message_not_found", "unavailable", "comparison_response_not_found"})
"""Reasons that say the provider could not compare: never a disagreement."""

PROVIDER_HIT = "cache_hit"
"""OpenAI's word for "nothing prevented reuse"."""


@dataclass(frozen=True, slots=True)
class ProviderDiagnosis:
    """What the provider said of a request's cache use: the raw reason and the tokens it says missed."""

    provider: str
    """``anthropic`` or ``openai``: whose vocabulary ``reason`` is in."""
    reason: str
    """The provider's own word: Anthropic's ``cache_miss_reason.type``, OpenAI's ``reason`` of a miss
    or the ``type`` of any other outcome (``cache_hit``, ``unavailable``, ...)."""
    missed_tokens: int | None
    """``cache_missed_input_tokens`` (Anthropic) or ``cache_missed_tokens`` (OpenAI), when stated."""

    def tiers(self) -> frozenset[str] | None:
        """The prefix tiers the reason names; ``None`` when it names none (settings, cannot compare)."""
        table = ANTHROPIC_REASON_TIERS if self.provider == "anthropic" else OPENAI_REASON_TIERS
        return table.get(self.reason)

    @property
    def is_miss(self) -> bool:
        """Whether the provider says the structure diverged (a ``*_changed`` reason or OpenAI's miss)."""
        return self.reason not in UNCOMPARABLE and self.reason != PROVIDER_HIT

    def to_json(self) -> dict[str, Any]:
        """The diagnosis as plain JSON (``{provider, reason, missed_tokens}``)."""
        return {"provider": self.provider, "reason": self.reason, "missed_tokens": self.missed_tokens}


def diagnosis_from_json(value: Any) -> ProviderDiagnosis | None:
    """A diagnosis back from :meth:`ProviderDiagnosis.to_json`; ``None`` for anything else."""
    if not isinstance(value, Mapping) or not isinstance(value.get("reason"), str) or not value["reason"]:
        return None
    missed = value.get("missed_tokens")
    return ProviderDiagnosis(
        provider=str(value.get("provider") or "anthropic"),
        reason=value["reason"],
        missed_tokens=_count(missed),
    )


def anthropic_diagnosis(message: Any) -> ProviderDiagnosis | None:
    """The diagnosis a Messages response body (or a stream's ``message_start`` message) carries.

    ``None`` when it carries none: ``diagnostics`` absent or null (nothing diverged, or nothing was
    asked), or a ``cache_miss_reason`` still null because the comparison had not finished.
    """
    if not isinstance(message, Mapping):
        return None
    diagnostics = message.get("diagnostics")
    if not isinstance(diagnostics, Mapping):
        return None
    reason = diagnostics.get("cache_miss_reason")
    if not isinstance(reason, Mapping) or not isinstance(reason.get("type"), str) or not reason["type"]:
        return None
    return ProviderDiagnosis("anthropic", reason["type"], _count(reason.get("cache_missed_input_tokens")))


def openai_diagnosis(response: Any) -> ProviderDiagnosis | None:
    """The diagnosis a Responses body (or a stream's completed response) carries; ``None`` without one."""
    if not isinstance(response, Mapping):
        return None
    diagnostics = response.get("prompt_cache_diagnostics")
    if not isinstance(diagnostics, Mapping):
        return None
    kind = diagnostics.get("type")
    if not isinstance(kind, str) or not kind:
        return None
    reason = diagnostics.get("reason")
    if kind == "cache_miss" and isinstance(reason, str) and reason:
        return ProviderDiagnosis("openai", reason, _count(diagnostics.get("cache_missed_tokens")))
    return ProviderDiagnosis("openai", kind, _count(diagnostics.get("cache_missed_tokens")))


def disagreement(diagnosis: ProviderDiagnosis | None, first_change_tier: str | None) -> str | None:
    """Why the provider's diagnosis and the engine's first change cannot both be right; ``None`` when
    they agree or cannot be compared.

    They disagree when the provider names a tier and the bytes show the first change in another one
    (or no change at all: an identical prefix), and when the provider says nothing diverged while the
    bytes show a change. A provider that could not compare (``previous_message_not_found``,
    ``unavailable``) or names a setting rather than a tier never disagrees. ``first_change_tier`` is
    the engine's first change's tier (see :func:`engine_tier`), ``None`` for an identical prefix.
    """
    if diagnosis is None or diagnosis.reason in UNCOMPARABLE:
        return None
    if diagnosis.reason == PROVIDER_HIT:
        if first_change_tier is None:
            return None
        return f"the provider found no divergence, the bytes change first in {first_change_tier}"
    tiers = diagnosis.tiers()
    if tiers is None:
        return None
    if first_change_tier is None:
        return f"the provider says {diagnosis.reason}, the bytes show an identical prefix"
    if first_change_tier == "params" or first_change_tier in tiers:
        # A changed setting keys the provider's cache in its own way: it may name any tier for it.
        return None
    return f"the provider says {diagnosis.reason}, the bytes change first in {first_change_tier}"


def engine_tier(first_change: Any) -> str | None:
    """The tier of the engine's first change in the providers' terms: ``model`` for a new model,
    ``params`` for other cache-keying settings, else the unit's tier (``tools``, ``system``,
    ``messages``); ``None`` when there was no change."""
    if not isinstance(first_change, Mapping):
        return None
    cause = first_change.get("cause")
    if cause == "model-changed":
        return "model"
    if cause == "params-changed":
        return "params"
    return str(first_change.get("tier") or "") or None


def _count(value: Any) -> int | None:
    # A count past any real prompt (or past the 64-bit column it is stored in) is as good as unstated.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MISSED_TOKENS:
        return None
    return int(value)
