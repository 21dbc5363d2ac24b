"""The analysis of a session logged without request bodies: each call against the transcript predictor.

read(N) = read(N-1) + write(N-1) within the TTL (see :mod:`projections.cache.transcript`), with the
boundaries that re-key the prefix taken from the session's events: compactions, and rewrites of
the prompt's static head (system prompt replaced, tools or model changed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from projections.cache.client_records import CreditRecord
from projections.cache.providers import is_material
from projections.cache.results import Finding, RequestResult, finding_of, rewritten_tokens
from projections.cache.transcript import TranscriptCall, TranscriptPrediction, predict_transcript
from projections.cache.warnings import over_credit, unexplained_miss
from projections.normalized import JSON, EventRecord, RequestRecord

RULE_PLACES = {
    "carried": "carried prefix",
    "after-compaction": "after a compaction",
    "system-changed": "after a system prompt rewrite",
    "ttl-expired": "after the TTL expired",
    "model-changed": "after a model switch",
}
"""Where a warning about a call sits, by the rule that predicted it: one warning per lineage and cause."""

RULE_DETAILS = {
    "first-call": "the first call of its lineage: nothing is known about what was cached before",
    "carried": "read(N) = read(N-1) + write(N-1): the previous call's prefix, inside the TTL",
    "after-compaction": "a compaction lies between: only the static prefix (tools and system) survives",
    "system-changed": (
        "the system prompt or the tools were rewritten between: the history after them is written again"
    ),
    "model-changed": "the model changed since the previous call: each model keeps its own cache",
    "ttl-expired": "more than the TTL passed since the previous call",
}
"""What each predictor rule means, shown beside the call's label."""


def is_boundary(event: EventRecord) -> bool:
    """An event the transcript predictor must know of: a compaction or a rewrite of the prompt's head."""
    return event.type.startswith("compaction/") or is_head_rewrite(event)


def is_head_rewrite(event: EventRecord) -> bool:
    """A log event that rewrites the static head of the prompt: the system prompt replaced on the
    surface, or a request header re-sent because the configuration (tools, model) changed."""
    if event.type == "system/message":
        return isinstance(event.surface_op, Mapping) and event.surface_op.get("op") == "replace"
    return event.type == "request/header" and event.data.get("reason") == "change"


def transcript_label(rule: str | None, material: bool) -> str:
    """The miss label of a call predicted by ``rule``; empty when the miss is not material.

    A material miss of a carried prefix is unexplained (nothing in the transcript says why); one
    after a compaction or a head rewrite is the changed prefix, named by the tier that changed.
    """
    if not material or rule is None:
        return ""
    if rule == "after-compaction":
        return "prefix-changed@messages"
    if rule == "system-changed":
        return "prefix-changed@system"
    return "unexplained" if rule == "carried" else rule


def transcript_detail(rule: str | None) -> str:
    """What the rule that predicted a call means; empty for a call nothing predicted."""
    return RULE_DETAILS.get(rule or "", "")


def analyse_transcript(
    ordered: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord],
    events: Sequence[EventRecord],
    findings: list[Finding],
) -> list[RequestResult]:
    """Each request's result from its usage alone, in the order given (start order).

    ``events`` are the session's boundaries (see :func:`is_boundary`); the self-check warnings met
    are appended to ``findings``.
    """
    predictions = _predictions(ordered, events)
    previous: dict[str, RequestRecord] = {}
    results: list[RequestResult] = []
    for record in ordered:
        prev = previous.get(record.lineage)
        if record.usage is not None:
            previous[record.lineage] = record
        result = _result(record, prev, predictions.get(record.key), credits.get(record.key), findings)
        results.append(result)
    return results


def _predictions(
    ordered: Sequence[RequestRecord], events: Sequence[EventRecord]
) -> dict[str, TranscriptPrediction]:
    boundaries = sorted(e.time for e in events if e.type.startswith("compaction/") and e.time is not None)
    rewrites = sorted(e.time for e in events if is_head_rewrite(e) and e.time is not None)
    calls: list[TranscriptCall] = []
    reported: list[RequestRecord] = []
    last: dict[str, datetime | None] = {}
    for record in ordered:
        if record.usage is None:
            continue
        before = last.get(record.lineage)
        last[record.lineage] = record.started_at
        calls.append(
            TranscriptCall(
                record.started_at,
                record.model,
                record.usage,
                record.lineage,
                compaction_before=_between(boundaries, before, record.started_at),
                system_changed_before=_between(rewrites, before, record.started_at),
            )
        )
        reported.append(record)
    return dict(zip((r.key for r in reported), predict_transcript(calls), strict=True))


def _between(moments: Sequence[datetime], before: datetime | None, at: datetime | None) -> bool:
    return before is not None and at is not None and any(before < moment <= at for moment in moments)


def _result(
    record: RequestRecord,
    prev: RequestRecord | None,
    prediction: TranscriptPrediction | None,
    credit: CreditRecord | None,
    findings: list[Finding],
) -> RequestResult:
    usage = record.usage
    read = prediction.read if prediction is not None else None
    rule = prediction.rule if prediction is not None else None
    cached_before = 0
    if prev is not None and prev.usage is not None:
        cached_before = (prev.usage.cache_read or 0) + (prev.usage.cache_write or 0)
    reprocessed = max(0, cached_before - (usage.cache_read or 0)) if usage is not None else 0
    total = usage.prompt_total if usage is not None else None
    material = read is not None and is_material(reprocessed, total or 0)
    label = transcript_label(rule, material)
    if credit is not None and rule is not None and rule != "first-call":
        # Without the bodies the wire's bound is what the log allows or what the provider did serve.
        served = usage.cache_read or 0 if usage is not None else 0
        # One warning per lineage and cause, counted, not one per request.
        place = f"{record.lineage}: {RULE_PLACES.get(rule, rule)}"
        excess = over_credit(record.key, place, credit.credited_tokens, max(read or 0, served))
        if excess is not None:
            findings.append(finding_of(excess))
    if rule == "carried" and usage is not None and read is not None:
        miss = unexplained_miss(record.key, record.lineage, usage.cache_read, read, total or 0, True)
        if miss is not None:
            findings.append(finding_of(miss))
    credited = credit.credited_tokens if credit else None
    rewritten = rewritten_tokens(usage, cached_before)
    data: dict[str, JSON] = {
        "ordinal": record.ordinal,
        "lineage": record.lineage,
        "model": record.model,
        "markers": [],
        "first_change": None,
        "figures": {
            "credited": credited,
            "wire_allows": None,
            "reported_read": usage.cache_read if usage else None,
            "reported_write": usage.cache_write if usage else None,
            "predicted_read": read,
            "predicted_write": None,
        },
        "label": label or None,
        "label_detail": transcript_detail(rule),
        "material": material,
        "previous": None if prev is None else {"ordinal": prev.ordinal, "key": prev.key},
        "cacheability": None,
        "record": [],
        "prompt_tokens": total,
        "rule": rule,
        "rewritten": rewritten,
    }
    return RequestResult(
        key=record.key,
        data=data,
        label=label,
        material=material,
        predicted_read=read,
        predicted_write=None,
        wire_allows=None,
        credited=credited,
        rewritten=rewritten,
        has_body=record.body is not None,
    )
