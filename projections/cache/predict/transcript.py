"""Cache prediction for transcript-only sources (Claude Code, Codex), which log usage but no bodies.

Without bytes or markers the predictor leans on one regularity (DESIGN §7): a call reads back what
the previous call of its lineage read and wrote, as long as the entry is still alive and nothing
re-keyed the prefix in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from projections.cache.predict.cache_models import openai_cached_tokens
from projections.normalized import Usage
from projections.providers.mechanics import TTL_SECONDS

FIVE_MINUTES = float(TTL_SECONDS["5m"])
ONE_HOUR = float(TTL_SECONDS["1h"])


@dataclass(frozen=True, slots=True)
class TranscriptCall:
    """One provider call as a transcript shows it."""

    started_at: datetime | None
    model: str
    usage: Usage
    lineage: str
    compaction_before: bool = False
    """A compaction boundary lies between the previous call of the lineage and this one."""
    system_changed_before: bool = False
    """The system prompt or the tool list was rewritten between the previous call and this one."""


@dataclass(frozen=True, slots=True)
class TranscriptPrediction:
    """Predicted cache read for one call, and the rule that gave it."""

    read: int | None
    """``None`` when nothing is known about what was cached before: the first call of a lineage, or
    a call whose rule needs a figure the previous call's usage did not report (a cache write a
    DeepSeek usage never carries, a cache read left out)."""
    rule: str

    def exact(self, reported: int | None) -> bool:
        """Whether the prediction equals the reported read."""
        return self.read is not None and reported is not None and self.read == reported


def predict_transcript(
    calls: Sequence[TranscriptCall], *, static_prefix: int | None = None, ttl_seconds: float | None = None
) -> list[TranscriptPrediction]:
    """Predict read(N) = read(N-1) + write(N-1) per lineage, in the order given.

    The rule holds within the TTL (1 h when the previous call wrote 1-hour tokens) with no model
    change or compaction between. After a compaction only the static prefix (tools and system
    prompt) survives: ``static_prefix`` when given, else the first call's read of that lineage.
    ``ttl_seconds``: one lifetime for every entry instead (a what-if of the 1-hour TTL throughout,
    where a call that only reads refreshes a 1-hour entry too).
    """
    previous: dict[str, TranscriptCall] = {}
    first_read: dict[str, int | None] = {}
    tools_read: dict[str, int] = {}
    out: list[TranscriptPrediction] = []
    for call in calls:
        prev = previous.get(call.lineage)
        previous[call.lineage] = call
        if prev is None:
            first_read[call.lineage] = call.usage.cache_read
            out.append(TranscriptPrediction(None, "first-call"))
            continue
        if call.compaction_before:
            static = static_prefix if static_prefix is not None else first_read.get(call.lineage)
            out.append(TranscriptPrediction(static, "after-compaction"))
            continue
        if call.system_changed_before:
            # Only the tools ahead of the system prompt survive. Their size is not in a body-less log,
            # but the first reported read after a rewrite measures it; until then it is unknown.
            out.append(TranscriptPrediction(tools_read.get(call.lineage), "system-changed"))
            if call.usage.cache_read is not None:
                tools_read.setdefault(call.lineage, call.usage.cache_read)
            continue
        if prev.model != call.model:
            out.append(TranscriptPrediction(0, "model-changed"))
            continue
        ttl = ttl_seconds or (ONE_HOUR if (prev.usage.cache_write_1h or 0) > 0 else FIVE_MINUTES)
        started, before = call.started_at, prev.started_at
        if started is not None and before is not None and (started - before).total_seconds() > ttl:
            out.append(TranscriptPrediction(0, "ttl-expired"))
            continue
        out.append(TranscriptPrediction(_carried(prev.usage), "carried"))
    return out


def _carried(prev: Usage) -> int | None:
    """What the previous call left in the cache for the next one; ``None`` when its usage cannot say.

    With explicit caching that is what it read plus what it wrote. OpenAI's automatic caching
    reports no writes: every prompt it processed is cached, in steps of 128 tokens from 1,024 up.
    Any other usage without a read or a write (DeepSeek reports no writes) leaves the sum unknown:
    counting the missing term as 0 would predict a read the data never showed.
    """
    if prev.convention == "openai" and prev.cache_write is None and prev.prompt_total is not None:
        return openai_cached_tokens(prev.prompt_total)
    if prev.cache_read is None or prev.cache_write is None:
        return None
    return prev.cache_read + prev.cache_write


def exact_share(calls: Sequence[TranscriptCall], predictions: Sequence[TranscriptPrediction]) -> float | None:
    """Share of predicted calls whose prediction equals the reported read; ``None`` with none predicted."""
    judged = [(c, p) for c, p in zip(calls, predictions, strict=True) if p.read is not None]
    if not judged:
        return None
    return sum(p.exact(c.usage.cache_read) for c, p in judged) / len(judged)


def appended_tokens(prev: Usage, cur: Usage) -> int | None:
    """Exact size of what was appended between two calls: the difference of their prompt totals."""
    if prev.prompt_total is None or cur.prompt_total is None:
        return None
    return cur.prompt_total - prev.prompt_total
