"""The analysis of a session logged without request bodies: each call against the transcript predictor.

read(N) = read(N-1) + write(N-1) within the TTL (see :mod:`projections.cache.predict.transcript`), with the
boundaries that re-key the prefix taken from the session's events: compactions, and rewrites of
the prompt's static head (system prompt replaced, tools or model changed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from projections.cache.cross_session import (
    PrefixIndex,
    WriterRef,
    WrittenPrefix,
    read_from_json,
    transcript_writes,
)
from projections.cache.explain.miss_candidates import Level, candidates_detail, miss_candidates
from projections.cache.explain.warnings import over_credit, unattributed_miss
from projections.cache.predict.client_records import CreditRecord
from projections.cache.predict.compaction import (
    COMPACTED,
    COMPACTION_LINEAGE,
    COMPACTION_REWRITE,
    cached_after,
    compaction_note,
)
from projections.cache.predict.idle_gap import idle_text
from projections.cache.predict.materiality import is_material
from projections.cache.predict.transcript import (
    FIVE_MINUTES,
    ONE_HOUR,
    TranscriptCall,
    TranscriptPrediction,
    predict_transcript,
)
from projections.cache.results import Finding, RequestResult, finding_of
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
    "cross-session": (
        "the read equals exactly a prompt another session of the same source left cached inside the "
        "TTL: a prefix shared across sessions (a compaction, a subagent, a parallel session)"
    ),
    "cross-lineage": (
        "the read equals exactly a prompt another lineage of this session left cached inside the TTL"
    ),
}
"""What each predictor rule means, shown beside the call's label."""

UNKNOWN_DETAILS = {
    "carried": (
        "read(N) = read(N-1) + write(N-1), but the previous call's usage reported no cache write or no "
        "cache read, so what it left cached, and the predicted read, are unknown"
    ),
    "after-compaction": (
        "a compaction lies between: only the static prefix (tools and system) survives, and its size is "
        "unknown (the lineage's first call reported no cache read)"
    ),
    "system-changed": (
        "the system prompt or the tools were rewritten between: what survives ahead of them is not yet "
        "measured, so the predicted read is unknown"
    ),
}
"""What a rule means for a call whose prediction it could not make: a figure it needs is unknown."""


STATIC_RULES = frozenset({"first-call", "after-compaction", "system-changed"})
"""Rules whose call reads only the lineage's static prefix (system + tools), if anything."""


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
    after a head rewrite is the changed prefix, named by the tier that changed. A call after a
    compaction is ``compacted``, material or not: its history was replaced by the summary.
    """
    if rule == "after-compaction":
        # A compaction replaced the history by design: said whether or not the write is material.
        return COMPACTED
    if not material or rule is None:
        return ""
    if rule == "system-changed":
        return "prefix-changed@system"
    return "unexplained" if rule == "carried" else rule


def transcript_detail(rule: str | None, *, predicted: bool = True) -> str:
    """What the rule that predicted a call means; empty for a call nothing predicted.

    ``predicted``: whether the rule gave a figure; when a figure it needs was not reported, the
    detail says the prediction is unknown rather than quote a formula it could not apply.
    """
    if not predicted and rule in UNKNOWN_DETAILS:
        return UNKNOWN_DETAILS[rule]
    return RULE_DETAILS.get(rule or "", "")


def analyse_transcript(
    ordered: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord],
    events: Sequence[EventRecord],
    findings: list[Finding],
    foreign: PrefixIndex | None = None,
) -> list[RequestResult]:
    """Each request's result from its usage alone, in the order given (start order).

    ``events`` are the session's boundaries (see :func:`is_boundary`); the self-check warnings met
    are appended to ``findings``. ``foreign``: what other sessions of the source left cached; a
    lineage's first call that reads exactly one of those prompts is predicted to read it.
    """
    predictions = _predictions(ordered, events)
    lineages = _lineage_writes(ordered)
    crossed = _shared_reads(ordered, predictions, foreign or PrefixIndex(), lineages)
    previous: dict[str, RequestRecord] = {}
    levels: dict[str, list[Level]] = {}
    results: list[RequestResult] = []
    for record in ordered:
        prev = previous.get(record.lineage)
        prediction = predictions.get(record.key)
        earlier = levels.setdefault(record.model, [])
        result = _result(record, prev, prediction, credits.get(record.key), findings, earlier)
        writer: WriterRef | None = None
        if record.key in crossed:
            writer = crossed[record.key].writer
            result.data["label_detail"] = _shared_detail(record, crossed[record.key])
        elif (
            prediction is not None
            and prediction.rule == "carried"
            and prediction.read is not None
            and prev is not None
        ):
            writer = WriterRef("", prev.key, prev.ordinal)
        result.data["read_from"] = read_from_json(writer)
        _note_compaction(
            result, record, prev, prediction, [foreign or PrefixIndex(), *_others(lineages, record)]
        )
        results.append(result)
        if record.usage is not None:
            previous[record.lineage] = record
            earlier.extend(_levels(record, prediction))
    return results


def _note_compaction(
    result: RequestResult,
    record: RequestRecord,
    prev: RequestRecord | None,
    prediction: TranscriptPrediction | None,
    indexes: Sequence[PrefixIndex],
) -> None:
    """What a compaction's summarising call or restart cost (see :mod:`projections.cache.predict.compaction`).

    A summarising call re-sends the main thread's context, so it can read what the main thread
    (another lineage, or the parent session of a compaction subagent) left cached last: the
    latest live write of its model no larger than its prompt.
    """
    data = result.data
    if record.lineage == COMPACTION_LINEAGE and record.usage is not None:
        prompt = record.usage.prompt_total or 0
        found = [index.latest_held(record.model, record.started_at, prompt) for index in indexes]
        held = max((w for w in found if w is not None), key=lambda w: (w.written_at, w.tokens), default=None)
        writer = ""
        if held is not None:
            where = f" of session {held.writer.session}" if held.writer.session else ""
            writer = f"request #{held.writer.ordinal + 1}{where}"
        note = compaction_note("call", record.usage, held.tokens if held is not None else None, writer=writer)
    elif prediction is not None and prediction.rule == "after-compaction":
        cached = cached_after(prev.usage) if prev is not None else None
        note = compaction_note("restart", record.usage, cached)
    else:
        return
    if note is None:
        return
    data["compaction"] = note.to_json()
    data["label_detail"] = note.detail()
    if note.role == "call" and is_material(note.reprocessed, note.prompt):
        data["label"] = result.label = COMPACTION_REWRITE
        data["material"] = result.material = True


def _lineage_writes(ordered: Sequence[RequestRecord]) -> dict[str, PrefixIndex]:
    """What each lineage of the session left cached, by lineage."""
    mine: dict[str, list[WrittenPrefix]] = {}
    for record in ordered:
        usage = record.usage
        if usage is None:
            continue
        writer = WriterRef("", record.key, record.ordinal)
        mine.setdefault(record.lineage, []).extend(
            transcript_writes(
                writer,
                record.model,
                record.started_at,
                usage.cache_read,
                usage.cache_write_5m,
                usage.cache_write_1h,
            )
        )
    return {lineage: PrefixIndex.of(writes) for lineage, writes in mine.items()}


def _others(lineages: Mapping[str, PrefixIndex], record: RequestRecord) -> list[PrefixIndex]:
    """The writes of the session's lineages other than ``record``'s."""
    return [index for lineage, index in lineages.items() if lineage != record.lineage]


def _shared_reads(
    ordered: Sequence[RequestRecord],
    predictions: dict[str, TranscriptPrediction],
    foreign: PrefixIndex,
    lineages: Mapping[str, PrefixIndex],
) -> dict[str, WrittenPrefix]:
    """The first calls of lineages that read exactly a prompt another lineage of this session or
    another session left cached, with that write (the latest one); their predictions become the
    read, by rule ``cross-lineage`` or ``cross-session``."""
    out: dict[str, WrittenPrefix] = {}
    for record in ordered:
        prediction = predictions.get(record.key)
        if prediction is None or prediction.rule != "first-call" or record.usage is None:
            continue
        indexes = [foreign, *_others(lineages, record)]
        found = [
            index.size_read(record.model, record.usage.cache_read or 0, record.started_at)
            for index in indexes
        ]
        writes = [write for write in found if write is not None and write.writer.key != record.key]
        if writes:
            write = max(writes, key=lambda w: w.written_at)
            out[record.key] = write
            rule = "cross-session" if write.writer.session else "cross-lineage"
            predictions[record.key] = TranscriptPrediction(write.tokens, rule)
    return out


def _shared_detail(record: RequestRecord, write: WrittenPrefix) -> str:
    seconds = (record.started_at - write.written_at).total_seconds() if record.started_at else 0.0
    where = "of another session" if write.writer.session else "of another lineage of this session"
    return (
        f"the read equals exactly the {write.tokens} tokens request #{write.writer.ordinal} {where} "
        f"left cached {seconds:.0f} s before, inside the TTL: a prefix shared with a compaction, a "
        "subagent or a parallel session"
    )


def _levels(record: RequestRecord, prediction: TranscriptPrediction | None) -> list[Level]:
    """The levels a call shows the cache held: what it read, and that plus what it wrote."""
    usage = record.usage
    if usage is None:
        return []
    read = usage.cache_read or 0
    static = prediction is not None and prediction.rule in STATIC_RULES
    return [
        Level(read, record.ordinal, "read", static),
        Level(read + (usage.cache_write or 0), record.ordinal, "read + write", False),
    ]


def _predictions(
    ordered: Sequence[RequestRecord], events: Sequence[EventRecord]
) -> dict[str, TranscriptPrediction]:
    called = transcript_calls(ordered, events)
    predictions = predict_transcript([call for _, call in called])
    return dict(zip((record.key for record, _ in called), predictions, strict=True))


def transcript_calls(
    ordered: Sequence[RequestRecord], events: Sequence[EventRecord]
) -> list[tuple[RequestRecord, TranscriptCall]]:
    """Each request with reported usage, in the order given, as the transcript predictor takes it:
    with the compactions and head rewrites (see :func:`is_boundary`) between it and the previous
    call of its lineage."""
    boundaries = sorted(e.time for e in events if e.type.startswith("compaction/") and e.time is not None)
    rewrites = sorted(e.time for e in events if is_head_rewrite(e) and e.time is not None)
    called: list[tuple[RequestRecord, TranscriptCall]] = []
    last: dict[str, datetime | None] = {}
    for record in ordered:
        if record.usage is None:
            continue
        before = last.get(record.lineage)
        last[record.lineage] = record.started_at
        call = TranscriptCall(
            record.started_at,
            record.model,
            record.usage,
            record.lineage,
            compaction_before=_between(boundaries, before, record.started_at),
            system_changed_before=_between(rewrites, before, record.started_at),
        )
        called.append((record, call))
    return called


def _gap(prev: RequestRecord, record: RequestRecord) -> float | None:
    if prev.started_at is None or record.started_at is None:
        return None
    return (record.started_at - prev.started_at).total_seconds()


def _ttl(prev: RequestRecord) -> float:
    return ONE_HOUR if prev.usage is not None and (prev.usage.cache_write_1h or 0) > 0 else FIVE_MINUTES


def _between(moments: Sequence[datetime], before: datetime | None, at: datetime | None) -> bool:
    return before is not None and at is not None and any(before < moment <= at for moment in moments)


def _result(
    record: RequestRecord,
    prev: RequestRecord | None,
    prediction: TranscriptPrediction | None,
    credit: CreditRecord | None,
    findings: list[Finding],
    levels: Sequence[Level],
) -> RequestResult:
    usage = record.usage
    read = prediction.read if prediction is not None else None
    rule = prediction.rule if prediction is not None else None
    cached_before = 0
    if prev is not None and prev.usage is not None:
        cached_before = (prev.usage.cache_read or 0) + (prev.usage.cache_write or 0)
    reprocessed = max(0, cached_before - (usage.cache_read or 0)) if usage is not None else 0
    total = usage.prompt_total if usage is not None else None
    # A read the provider did not report is no miss of any size: nothing shows what was re-processed.
    reported = usage is not None and usage.cache_read is not None
    material = read is not None and reported and is_material(reprocessed, total or 0)
    label = transcript_label(rule, material)
    if credit is not None and rule is not None and rule != "first-call":
        # Without the bodies the wire's bound is what the log allows or what the provider did serve.
        served = usage.cache_read or 0 if usage is not None else 0
        # One warning per lineage and cause, counted, not one per request.
        place = f"{record.lineage}: {RULE_PLACES.get(rule, rule)}"
        excess = over_credit(record.key, place, credit.credited_tokens, max(read or 0, served))
        if excess is not None:
            findings.append(finding_of(excess))
    detail = transcript_detail(rule, predicted=read is not None)
    idle = _gap(prev, record) if rule == "ttl-expired" and prev is not None else None
    if idle is not None and prev is not None:
        detail += f": {idle_text(idle)} idle, TTL {idle_text(_ttl(prev))}"
    candidates: list[JSON] = []
    if label == "unexplained" and usage is not None and read is not None and prev is not None:
        versions = (prev.client_version, record.client_version)
        found = miss_candidates(usage.cache_read or 0, levels, _gap(prev, record), _ttl(prev), versions)
        candidates = [c.to_json() for c in found]
        detail = candidates_detail(usage.cache_read or 0, read, found)
        findings.append(
            finding_of(unattributed_miss(record.key, record.lineage, usage.cache_read or 0, read, found[0]))
        )
    credited = credit.credited_tokens if credit else None
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
        "label_detail": detail,
        "candidates": candidates,
        "material": material,
        "previous": None if prev is None else {"ordinal": prev.ordinal, "key": prev.key},
        "cacheability": None,
        "record": [],
        "prompt_tokens": total,
        "rule": rule,
        "idle_seconds": idle,
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
        has_body=record.body is not None,
    )
