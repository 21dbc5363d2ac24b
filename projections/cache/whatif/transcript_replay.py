"""The replay of a session logged without bodies (a Claude Code transcript): usage and times only.

Without the bytes nothing is known of where the markers sat or what changed in place; what is
known is how long each call's cached prefix was (its read plus its write: the prefix through its
last breakpoint) and when each call started. So the transcript rule of the analysis
(:func:`~projections.cache.predict.transcript.predict_transcript`, read(N) = read(N-1) + write(N-1) inside
the TTL, with the session's compactions and head rewrites) is replayed twice: with the lifetimes
as recorded, and with every entry living an hour.

Per call, with ``B`` its reported read + write: the read is the rule's prediction, at most ``B``
(a call whose prediction is unknown, the first of its lineage among them, reads what it reported),
the write is ``B`` less that read (1-hour tokens first, as reported, in the recorded world; all of
it at the 1-hour rate in the 1-hour world), and the uncached input is as reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from projections.cache.predict.transcript import TranscriptCall, TranscriptPrediction, predict_transcript
from projections.cache.transcript_analysis import transcript_calls
from projections.cache.whatif.replay import reported_tokens
from projections.cache.whatif.tally import GroupKey, Tally
from projections.money import Tokens
from projections.normalized import EventRecord, RequestRecord
from projections.providers.mechanics import TTL_SECONDS

RULE_CAUSES = {
    "ttl-expired": "ttl-expired",
    "after-compaction": "after-compaction",
    "model-changed": "model-changed",
}
"""The transcript rules a call's saving is put down to when it missed: the rule that expected the miss."""


def replay_transcript(
    ordered: Sequence[RequestRecord],
    events: Sequence[EventRecord],
    recorded: Tally,
    reported: Tally,
    ttl_1h: Tally | None,
) -> int:
    """Replay the calls of ``ordered`` (start order) into ``recorded`` and, when given, the 1-hour
    world ``ttl_1h``; the provider's own usage goes to ``reported``. Returns how many calls were
    replayed."""
    called = transcript_calls(ordered, events)
    calls = [call for _, call in called]
    as_recorded = predict_transcript(calls)
    hour = (
        predict_transcript([_all_1h(call) for call in calls], ttl_seconds=TTL_SECONDS["1h"])
        if ttl_1h
        else None
    )
    for index, (record, _) in enumerate(called):
        usage = reported_tokens(record.usage)
        prediction = as_recorded[index]
        key = GroupKey(record.model, record.client_version, _cause(prediction, usage))
        reported.add(key._replace(cause=""), usage, touched=False, request=record.key)
        as_was = _replayed(prediction, usage, one_hour=False)
        recorded.add(key, as_was, touched=False, request=record.key)
        if ttl_1h is not None and hour is not None:
            tokens = _replayed(hour[index], usage, one_hour=True)
            ttl_1h.add(key, tokens, touched=tokens != as_was, request=record.key)
    return len(called)


def _all_1h(call: TranscriptCall) -> TranscriptCall:
    """The call as a client writing every entry for an hour sends it: the same tokens written, at
    the 1-hour lifetime."""
    usage = call.usage
    written = (usage.cache_write_5m or 0) + (usage.cache_write_1h or 0)
    return replace(call, usage=replace(usage, cache_write_5m=0, cache_write_1h=written))


def _replayed(prediction: TranscriptPrediction, usage: Tokens, *, one_hour: bool) -> Tokens:
    cached = usage.cache_read + usage.written
    read = usage.cache_read if prediction.read is None else min(prediction.read, cached)
    write = cached - read
    write_1h = write if one_hour else min(write, usage.cache_write_1h)
    return Tokens(usage.uncached_input, read, write - write_1h, write_1h, usage.output)


def _cause(prediction: TranscriptPrediction, usage: Tokens) -> str:
    """The recorded call's miss cause: the rule that predicted a read short of its cached prefix."""
    if prediction.read is None or prediction.read >= usage.cache_read + usage.written:
        return ""
    return RULE_CAUSES.get(prediction.rule, "")
