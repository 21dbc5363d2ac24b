"""Cache analysis of stored sessions: the engine's diffs, predictions and self-checks, kept per request.

A stored request keeps its units (block hashes) but not its body, so the body is rebuilt from the
units and their blocks and rendered again; the re-rendered block hashes must equal the stored ones,
or the request is analysed from its usage alone and the mismatch is reported. Client records
(``cache/credit``, ``cache/render-record``, ``cache/log`` events) are matched to requests by their
``requestRef``: equal to the request's key, else ``#N`` or ``N`` naming the request's ordinal.

Transcript-only sessions (no bodies) use the transcript predictor: read(N) = read(N-1) + write(N-1)
within the TTL, with compaction boundaries taken from the session's ``compaction/*`` events.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from dashboard.models import Block, Event, Request, RequestAnalysis, Session, SessionAnalysis, Warning
from dashboard.services.collector import collector_paused
from projections.cache.analysis import RequestAnalysis as EngineAnalysis
from projections.cache.analysis import analyse_lineage
from projections.cache.client_records import (
    CreditRecord,
    ReceiptError,
    parse_credit_event,
    verify_render_record_event,
)
from projections.cache.providers import UnknownModelError, cache_facts, is_material
from projections.cache.render_record import render_record
from projections.cache.rendered_request import RenderedRequest
from projections.cache.rendering import RenderError, render_request
from projections.cache.transcript import TranscriptCall, predict_transcript
from projections.cache.warnings import CacheWarning, over_credit, render_mismatch, unexplained_miss
from projections.formats import read_sessions
from projections.normalized import JSON, EventRecord, LineError, RequestRecord, Usage

CLIENT_RECORD_TYPES = ("cache/credit", "cache/render-record", "cache/log")
ANALYSIS_KINDS = (
    Warning.Kind.RENDER_MISMATCH,
    Warning.Kind.OVER_CREDIT,
    Warning.Kind.UNEXPLAINED_MISS,
    Warning.Kind.MODEL_ERROR,
    Warning.Kind.MARKER_LIMIT,
    Warning.Kind.HOST_LOG,
)
CLIENT_RECORD_PLACE = "client record"
"""Places of unreadable client records start with this, so the analysis owns exactly those rows."""
WRITE_BATCH = 500
_ORDINAL_REF = re.compile(r"#?(\d+)")
_CONTENT_BLOCK_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})


class StoredRequestError(ValueError):
    """A stored request whose units cannot be turned back into the body that was sent."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A self-check warning before it is stored: kind, place, message and the request that showed it."""

    kind: str
    place: str
    message: str
    request_key: str | None


@dataclass(slots=True)
class RequestResult:
    """The analysis of one request: the JSON kept in ``RequestAnalysis.data`` and its indexed columns."""

    key: str
    data: dict[str, JSON]
    label: str
    material: bool
    predicted_read: int | None
    predicted_write: int | None
    wire_allows: int | None
    credited: int | None
    rewritten: int

    def explain_json(self) -> dict[str, JSON]:
        """The shape ``manage.py explain --json`` prints: the engine's own JSON of the request."""
        keys = ("ordinal", "lineage", "model", "markers", "first_change", "figures", "label")
        markers = [
            {k: m[k] for k in ("ordinal", "position", "tier", "prefix_tokens", "status")}
            for m in self.data["markers"]
        ]
        change = self.data["first_change"]
        short = None if change is None else {k: change[k] for k in ("position", "tier", "cause")}
        return {**{k: self.data[k] for k in keys}, "markers": markers, "first_change": short}


@dataclass(slots=True)
class RecordsAnalysis:
    """Every request's result in ordinal order, the findings, and how many client records matched nothing."""

    results: list[RequestResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unmatched_records: int = 0


# --- rebuilding a stored request ---------------------------------------------------------------


def stored_usage(row: Request) -> Usage | None:
    """The row's usage buckets as the engine's :class:`Usage`; ``None`` when nothing was reported."""
    buckets = (
        row.uncached_input_tokens,
        row.cache_read_tokens,
        row.cache_write_5m_tokens,
        row.cache_write_1h_tokens,
        row.output_tokens,
    )
    if all(bucket is None for bucket in buckets):
        return None
    return Usage(
        uncached_input=row.uncached_input_tokens,
        cache_read=row.cache_read_tokens,
        cache_write_5m=row.cache_write_5m_tokens,
        cache_write_1h=row.cache_write_1h_tokens,
        output=row.output_tokens,
        convention=row.usage_convention or "anthropic",  # type: ignore[arg-type]
        raw=row.usage_raw or {},
    )


def stored_body(row: Request, raws: Mapping[str, JSON]) -> dict[str, JSON]:
    """The request body rebuilt from the row's units, their blocks' JSON (``raws`` by hash) and markers.

    ``cache_control`` is not part of a block, so it is put back on the units the markers name.
    """
    units: list[list[Any]] = row.units
    missing = [unit[0] for unit in units if unit[0] not in raws]
    if missing:
        raise StoredRequestError(f"request {row.pk}: block {missing[0]} is not stored")
    marked: dict[int, str] = {}
    automatic: str | None = None
    for marker in row.markers:
        if marker.get("automatic"):
            automatic = marker.get("ttl", "5m")
        else:
            marked[int(marker["position"])] = marker.get("ttl", "5m")
    values: list[JSON] = []
    for position, unit in enumerate(units):
        raw = raws[unit[0]]
        if position in marked:
            if not isinstance(raw, dict):
                raise StoredRequestError(
                    f"request {row.pk}: marker at unit {position} sits on a plain string"
                )
            raw = {**raw, "cache_control": _control(marked[position])}
        values.append(raw)
    body: dict[str, JSON] = {"model": row.model, **row.params}
    if "effort" in row.params and row.api == "messages":
        body.pop("effort")
        body["output_config"] = {"effort": row.params["effort"]}
    for derived in ("images", "citations", "web_search"):
        body.pop(derived, None)  # found in the content by the renderer, never sent as fields
    tools = [values[i] for i, unit in enumerate(units) if unit[1] == "tools"]
    if tools:
        body["tools"] = tools
    heads = [i for i, unit in enumerate(units) if unit[1] != "tools" and unit[3] is None]
    messages = _messages(row, units, values)
    if row.api == "messages":
        if heads:
            only = values[heads[0]]
            body["system"] = only if len(heads) == 1 and isinstance(only, str) else [values[i] for i in heads]
        body["messages"] = messages
    elif row.api == "chat":
        body["messages"] = messages
    elif row.api == "responses":
        if heads:
            body["instructions"] = values[heads[0]]
        body["input"] = messages
    else:
        raise StoredRequestError(f"request {row.pk}: unknown api {row.api!r}")
    if automatic is not None:
        body["cache_control"] = _control(automatic)
    return body


def _control(ttl: str) -> dict[str, JSON]:
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _messages(row: Request, units: list[list[Any]], values: list[JSON]) -> list[JSON]:
    groups: dict[int, list[int]] = defaultdict(list)
    for i, unit in enumerate(units):
        if unit[3] is not None:
            groups[int(unit[3])].append(i)
    count = max(groups, default=-1) + 1
    # A message without content renders no unit; an empty one keeps the later indexes in place.
    messages: list[JSON] = [{"role": "user", "content": []} for _ in range(count)]
    for index, members in groups.items():
        messages[index] = _message(row.api, [units[i] for i in members], [values[i] for i in members])
    return messages


def _message(api: str, units: list[list[Any]], values: list[JSON]) -> JSON:
    role = units[0][2]
    first = values[0]
    if api == "chat" and role == "tool" and isinstance(first, dict):
        return {"role": "tool", "tool_call_id": first.get("tool_call_id"), "content": first.get("content")}
    if (
        api == "responses"
        and len(values) == 1
        and isinstance(first, dict)
        and first.get("type") not in _CONTENT_BLOCK_TYPES
    ):
        return first  # an item of its own (function call, its output, reasoning)
    message: dict[str, JSON] = {"role": role}
    if units[0][5] is not None:
        message["id"] = units[0][5]
    calls: list[JSON] = []
    if api == "chat":
        while values and isinstance(values[-1], dict) and "function" in values[-1]:
            calls.insert(0, values.pop())
    if len(values) == 1 and isinstance(values[0], str):
        message["content"] = values[0]
    elif values or not calls:
        message["content"] = list(values)
    if calls:
        message["tool_calls"] = calls
    return message


def stored_record(row: Request, raws: Mapping[str, JSON]) -> RequestRecord:
    """The stored request as the engine takes it, with its body rebuilt when it had one.

    Raises :class:`StoredRequestError` when the rebuilt body does not render to the stored units.
    """
    return stored_rendering(row, raws)[0]


def stored_rendering(row: Request, raws: Mapping[str, JSON]) -> tuple[RequestRecord, RenderedRequest | None]:
    """:func:`stored_record`, with the rebuilt body's rendering (``None`` without a body).

    The rendering is what proves the rebuilt body matches the stored units; the analysis takes it
    as it is rather than rendering the same body twice.
    """
    if not row.has_body:
        return _record_of(row, body=None), None
    body = stored_body(row, raws)
    record = _record_of(row, body=body)
    try:
        rendered = render_request(row.provider, row.api, body, usage=record.usage)
    except RenderError as error:
        raise StoredRequestError(f"request {row.pk}: the rebuilt body does not render: {error}") from None
    _check_rendering(row, rendered)
    return record, rendered


def _check_rendering(row: Request, rendered: RenderedRequest) -> None:
    stored = [(u[0], u[2], u[3]) for u in row.units]
    again = list(zip(rendered.block_hashes, rendered.roles, rendered.message_indexes, strict=True))
    if stored == again:
        return
    position = next((i for i, (a, b) in enumerate(zip(stored, again, strict=False)) if a != b), None)
    if position is None:
        raise StoredRequestError(f"request {row.pk}: {len(again)} units rebuilt, {len(stored)} stored")
    raise StoredRequestError(f"request {row.pk}: unit {position} does not rebuild to its stored hash")


def block_raws(hashes: Iterable[str]) -> dict[str, JSON]:
    """Each block's JSON by hash, read in batches (one query per batch, never one per unit)."""
    wanted = list(dict.fromkeys(hashes))
    raws: dict[str, JSON] = {}
    for start in range(0, len(wanted), WRITE_BATCH):
        chunk = wanted[start : start + WRITE_BATCH]
        for block_hash, canonical in Block.objects.filter(hash__in=chunk).values_list("hash", "canonical"):
            raws[block_hash] = json.loads(canonical)
    return raws


# --- the analysis of a list of records (no database) ---------------------------------------------


def analyse_records(
    records: Sequence[RequestRecord],
    events: Sequence[EventRecord] = (),
    *,
    renderings: Mapping[str, RenderedRequest] | None = None,
) -> RecordsAnalysis:
    """Analyse a session's requests with its client records; the same for a file and for the store.

    Requests with bodies go through the engine's lineage analysis in start order; a session without
    any body goes through the transcript predictor. ``renderings``: bodies already rendered, by
    request key (see :func:`analyse_lineage`).
    """
    out = RecordsAnalysis()
    by_key = {r.key: r for r in records}
    by_ordinal = {r.ordinal: r for r in records}
    credits: dict[str, CreditRecord] = {}
    render_records: list[tuple[EventRecord, RequestRecord]] = []
    for event in events:
        if event.type not in CLIENT_RECORD_TYPES:
            continue
        ref = event.data.get("requestRef")
        request = _match(ref, by_key, by_ordinal)
        if event.type == "cache/log":
            line = event.data.get("line")
            text = line if isinstance(line, str) else json.dumps(event.data, sort_keys=True)
            out.findings.append(
                Finding("host-log", f"seq {event.seq}", text, request.key if request else None)
            )
            continue
        if request is None:
            out.unmatched_records += 1
            continue
        if event.type == "cache/credit":
            try:
                credits[request.key] = parse_credit_event(event.data)
            except ReceiptError as error:
                out.findings.append(_unreadable(event, error, request))
        else:
            render_records.append((event, request))
    ordered = sorted(records, key=_start_order)
    if any(r.body is not None for r in records):
        results, engine = _analyse_bodies(ordered, credits, out.findings, renderings or {})
        for event, request in render_records:
            rendered = engine.get(request.key)
            if rendered is None:
                continue
            try:
                mismatches = verify_render_record_event(event.data, rendered)
            except ReceiptError as error:
                out.findings.append(_unreadable(event, error, request))
                continue
            found = render_mismatch(request.key, request.lineage, mismatches)
            if found is not None:
                out.findings.append(_finding(found))
    else:
        results = _analyse_transcript(ordered, credits, events, out.findings)
    out.results = sorted(results, key=lambda r: int(r.data["ordinal"]))
    return out


def _match(
    ref: JSON, by_key: Mapping[str, RequestRecord], by_ordinal: Mapping[int, RequestRecord]
) -> RequestRecord | None:
    if isinstance(ref, int) and not isinstance(ref, bool):
        return by_ordinal.get(ref)
    if not isinstance(ref, str):
        return None
    if ref in by_key:
        return by_key[ref]
    found = _ORDINAL_REF.fullmatch(ref)
    return by_ordinal.get(int(found.group(1))) if found else None


def _unreadable(event: EventRecord, error: Exception, request: RequestRecord | None) -> Finding:
    return Finding(
        "ingest-error",
        f"{CLIENT_RECORD_PLACE} seq {event.seq}",
        f"{event.type} at seq {event.seq} cannot be read: {error}",
        request.key if request else None,
    )


def _finding(warning: CacheWarning) -> Finding:
    return Finding(warning.kind, warning.place, warning.message, warning.request)


def _start_order(record: RequestRecord) -> tuple[float, int]:
    started = record.started_at.timestamp() if record.started_at is not None else float("inf")
    return started, record.ordinal


def _known_model(record: RequestRecord) -> bool:
    try:
        cache_facts(record.platform, record.model)
    except UnknownModelError:
        return False
    return True


def _analyse_bodies(
    ordered: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord],
    findings: list[Finding],
    renderings: Mapping[str, RenderedRequest],
) -> tuple[list[RequestResult], dict[str, RenderedRequest]]:
    usable: list[RequestRecord] = []
    for record in ordered:
        if record.body is not None and not _known_model(record):
            findings.append(
                Finding(
                    "model-error",
                    f"model {record.model}",
                    f"no cache facts for platform {record.platform!r}, model {record.model!r}: "
                    "its requests are shown without a prediction",
                    record.key,
                )
            )
            record = _without_body(record)
        usable.append(record)
    analyses = analyse_lineage(usable, credits=credits, renderings=renderings)
    written: set[str] = set()
    previous: dict[str, EngineAnalysis] = {}
    results: list[RequestResult] = []
    rendered: dict[str, RenderedRequest] = {}
    for record, analysis in zip(usable, analyses, strict=True):
        findings.extend(_finding(w) for w in analysis.warnings)
        prev = previous.get(record.lineage)
        result = _body_result(record, analysis, prev, written)
        results.append(result)
        if analysis.rendered is not None:
            rendered[record.key] = analysis.rendered
            previous[record.lineage] = analysis
            minimum = cache_facts(record.platform, record.model).minimum_tokens
            markers = render_record(analysis.rendered).markers
            written.update(m.prefix_hash for m in markers if m.prefix_tokens >= minimum)
    return results, rendered


def _without_body(record: RequestRecord) -> RequestRecord:
    return RequestRecord(
        key=record.key,
        ordinal=record.ordinal,
        lineage=record.lineage,
        provider=record.provider,
        platform=record.platform,
        api=record.api,
        model=record.model,
        started_at=record.started_at,
        first_token_at=record.first_token_at,
        usage=record.usage,
        status=record.status,
    )


def _body_result(
    record: RequestRecord, analysis: EngineAnalysis, prev: EngineAnalysis | None, written: set[str]
) -> RequestResult:
    data = analysis.to_json()
    markers = data["markers"]
    for view, row in zip(analysis.markers, markers, strict=True):
        row["identity"] = view.identity
        row["why"] = view.why
    change = analysis.first_change
    if change is not None:
        cause = change.cause
        span = cause.span
        data["first_change"] = {
            "position": change.position,
            "tier": change.tier,
            "cause": cause.label,
            "identity": change.identity,
            "byte_offset": change.byte_offset,
            "sublabel": cause.sublabel,
            "detail": cause.detail,
            "remedy": cause.remedy,
            "span": None
            if span is None
            else {"start": span.start, "old_end": span.old_end, "new_end": span.new_end},
        }
    data["previous"] = None if prev is None else {"ordinal": prev.ordinal, "key": prev.key}
    data["label_detail"] = analysis.label_detail
    data["material"] = analysis.material
    rendered = analysis.rendered
    rewritten = 0
    if rendered is not None:
        data["cacheability"] = {
            tier: {"shared": share.shared, "rest": share.rest}
            for tier, share in analysis.cacheability.items()
        }
        data["record"] = [
            {
                "ordinal": m.ordinal,
                "position": m.position,
                "tier": m.tier,
                "identity": m.identity,
                "prefix_tokens": m.prefix_tokens,
                "ttl": m.ttl,
            }
            for m in render_record(rendered).markers
        ]
        data["prompt_tokens"] = rendered.total_tokens
        before = max(
            (rendered.prefix_tokens(p) for p, h in enumerate(rendered.prefix_hashes) if h in written),
            default=0,
        )
        rewritten = _rewritten(record.usage, before)
    else:
        data["cacheability"] = None
        data["record"] = []
        data["prompt_tokens"] = record.usage.prompt_total if record.usage else None
    data["rewritten"] = rewritten
    figures = data["figures"]
    return RequestResult(
        key=record.key,
        data=data,
        label=analysis.label or "",
        material=analysis.material,
        predicted_read=figures["predicted_read"],
        predicted_write=figures["predicted_write"],
        wire_allows=figures["wire_allows"],
        credited=figures["credited"],
        rewritten=rewritten,
    )


def _rewritten(usage: Usage | None, written_before: int) -> int:
    """Reported write tokens inside a prefix an earlier request had already written."""
    if usage is None or not usage.cache_write:
        return 0
    read = usage.cache_read or 0
    return max(0, min(written_before, read + usage.cache_write) - read)


def is_boundary(event: EventRecord) -> bool:
    """An event the transcript predictor must know of: a compaction or a rewrite of the prompt's head."""
    return event.type.startswith("compaction/") or is_head_rewrite(event)


def is_head_rewrite(event: EventRecord) -> bool:
    """A log event that rewrites the static head of the prompt: the system prompt replaced on the
    surface, or a request header re-sent because the configuration (tools, model) changed."""
    if event.type == "system/message":
        return isinstance(event.surface_op, Mapping) and event.surface_op.get("op") == "replace"
    return event.type == "request/header" and event.data.get("reason") == "change"


def _between(moments: Sequence[datetime], before: datetime | None, at: datetime | None) -> bool:
    return before is not None and at is not None and any(before < moment <= at for moment in moments)


def _analyse_transcript(
    ordered: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord],
    events: Sequence[EventRecord],
    findings: list[Finding],
) -> list[RequestResult]:
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
    predictions = dict(zip((r.key for r in reported), predict_transcript(calls), strict=True))
    previous: dict[str, RequestRecord] = {}
    results: list[RequestResult] = []
    for record in ordered:
        prediction = predictions.get(record.key)
        prev = previous.get(record.lineage)
        usage = record.usage
        if usage is not None:
            previous[record.lineage] = record
        credit = credits.get(record.key)
        read = prediction.read if prediction is not None else None
        cached_before = 0
        if prev is not None and prev.usage is not None:
            cached_before = (prev.usage.cache_read or 0) + (prev.usage.cache_write or 0)
        reprocessed = max(0, cached_before - (usage.cache_read or 0)) if usage is not None else 0
        total = usage.prompt_total if usage is not None else None
        material = prediction is not None and read is not None and is_material(reprocessed, total or 0)
        label = ""
        if material and prediction is not None:
            label = "unexplained" if prediction.rule == "carried" else prediction.rule
            if prediction.rule == "after-compaction":
                label = "prefix-changed@messages"
            elif prediction.rule == "system-changed":
                label = "prefix-changed@system"
        if credit is not None and prediction is not None and prediction.rule != "first-call":
            # Without the bodies the wire's bound is what the log allows or what the provider did serve.
            served = usage.cache_read or 0 if usage is not None else 0
            # One warning per lineage and cause, counted, not one per request.
            rule = prediction.rule if prediction is not None else "unknown"
            place = f"{record.lineage}: {_TRANSCRIPT_PLACES.get(rule, rule)}"
            excess = over_credit(record.key, place, credit.credited_tokens, max(read or 0, served))
            if excess is not None:
                findings.append(_finding(excess))
        if prediction is not None and prediction.rule == "carried" and usage is not None and read is not None:
            miss = unexplained_miss(record.key, record.lineage, usage.cache_read, read, total or 0, True)
            if miss is not None:
                findings.append(_finding(miss))
        data: dict[str, JSON] = {
            "ordinal": record.ordinal,
            "lineage": record.lineage,
            "model": record.model,
            "markers": [],
            "first_change": None,
            "figures": {
                "credited": credit.credited_tokens if credit else None,
                "wire_allows": None,
                "reported_read": usage.cache_read if usage else None,
                "reported_write": usage.cache_write if usage else None,
                "predicted_read": read,
                "predicted_write": None,
            },
            "label": label or None,
            "label_detail": _transcript_detail(prediction.rule if prediction else None),
            "material": material,
            "previous": None if prev is None else {"ordinal": prev.ordinal, "key": prev.key},
            "cacheability": None,
            "record": [],
            "prompt_tokens": total,
            "rule": prediction.rule if prediction else None,
            "rewritten": _rewritten(usage, cached_before),
        }
        results.append(
            RequestResult(
                record.key,
                data,
                label,
                material,
                read,
                None,
                None,
                credit.credited_tokens if credit else None,
                int(data["rewritten"]),
            )
        )
    return results


_TRANSCRIPT_PLACES = {
    "carried": "carried prefix",
    "after-compaction": "after a compaction",
    "system-changed": "after a system prompt rewrite",
    "ttl-expired": "after the TTL expired",
    "model-changed": "after a model switch",
}

_TRANSCRIPT_RULES = {
    "first-call": "the first call of its lineage: nothing is known about what was cached before",
    "carried": "read(N) = read(N-1) + write(N-1): the previous call's prefix, inside the TTL",
    "after-compaction": "a compaction lies between: only the static prefix (tools and system) survives",
    "system-changed": (
        "the system prompt or the tools were rewritten between: the history after them is written again"
    ),
    "model-changed": "the model changed since the previous call: each model keeps its own cache",
    "ttl-expired": "more than the TTL passed since the previous call",
}


def _transcript_detail(rule: str | None) -> str:
    return _TRANSCRIPT_RULES.get(rule or "", "")


# --- the stored session ------------------------------------------------------------------------


def analysis_request(*, session_id: int) -> bool:
    """Mark ``session_id``'s analysis as wanted; True when a task should be sent to run it."""
    now = timezone.now()
    analysis, created = SessionAnalysis.objects.get_or_create(
        session_id=session_id, defaults={"requested_at": now, "generation": 1}
    )
    if created:
        return True
    updated = SessionAnalysis.objects.filter(pk=analysis.pk).update(
        status=SessionAnalysis.Status.QUEUED, requested_at=now, claimed_by="", generation=F("generation") + 1
    )
    return bool(updated)


def analysis_claim(*, session_id: int, owner: str) -> bool:
    """Claim the queued analysis of ``session_id`` for ``owner``; False when it is not queued."""
    claimed = SessionAnalysis.objects.filter(
        session_id=session_id, status=SessionAnalysis.Status.QUEUED
    ).update(status=SessionAnalysis.Status.RUNNING, claimed_by=owner, started_at=timezone.now())
    return bool(claimed)


def session_analyse(*, session_id: int, owner: str = "") -> RecordsAnalysis:
    """Analyse every request of a stored session and store the results and warnings.

    With ``owner`` (a claimed job) the job's progress and end are recorded on its row; a job
    re-queued by a newer ingest while this one ran still stores what it read (see :func:`_store`)
    and is left queued for the next task.
    """
    with collector_paused():
        return _session_analyse(session_id, owner)


def _session_analyse(session_id: int, owner: str) -> RecordsAnalysis:
    session = Session.objects.get(pk=session_id)
    # Read before the rows: every ingest counted by now has committed, so the rows read below hold
    # at least what this generation asked to analyse.
    generation = (
        SessionAnalysis.objects.filter(session_id=session_id).values_list("generation", flat=True).first()
        or 0
    )
    rows = list(Request.objects.filter(session=session).order_by("ordinal"))
    _progress(session_id, owner, total=len(rows), done=0)
    try:
        raws = block_raws(unit[0] for row in rows if row.has_body for unit in row.units)
        records: list[RequestRecord] = []
        renderings: dict[str, RenderedRequest] = {}
        findings: list[Finding] = []
        for row in rows:
            try:
                record, rendered = stored_rendering(row, raws)
            except StoredRequestError as error:
                findings.append(
                    Finding(
                        "ingest-error", f"{CLIENT_RECORD_PLACE} request {row.ordinal}", str(error), row.key
                    )
                )
                records.append(stored_record_usage_only(row))
                continue
            records.append(record)
            if rendered is not None:
                renderings[record.key] = rendered
        events = [
            EventRecord(seq=e.seq, type=e.type, time=e.time, data=e.data)
            for e in Event.objects.filter(session=session)
            .filter(type__in=CLIENT_RECORD_TYPES)
            .order_by("seq")
        ]
        boundaries = [
            EventRecord(seq=e.seq, type=e.type, time=e.time, data=e.data, surface_op=e.surface_op)
            for e in Event.objects.filter(session=session)
            .filter(Q(type__startswith="compaction/") | Q(type__in=("system/message", "request/header")))
            .only("seq", "type", "time", "data", "surface_op")
        ]
        result = analyse_records(
            records, events + [e for e in boundaries if is_boundary(e)], renderings=renderings
        )
        result.findings[:0] = findings
        if not _store(session, rows, result, generation):
            return result  # a run that read a newer generation has stored its results already
    except Exception as error:
        if owner:
            SessionAnalysis.objects.filter(session_id=session_id, claimed_by=owner).update(
                status=SessionAnalysis.Status.FAILED,
                finished_at=timezone.now(),
                message=f"{type(error).__name__}: {error}",
            )
        raise
    if owner:
        SessionAnalysis.objects.filter(
            session_id=session_id, claimed_by=owner, status=SessionAnalysis.Status.RUNNING
        ).update(
            status=SessionAnalysis.Status.DONE,
            finished_at=timezone.now(),
            requests_done=len(rows),
            unmatched_records=result.unmatched_records,
            message="",
        )
    else:
        SessionAnalysis.objects.update_or_create(
            session=session,
            defaults={
                "status": SessionAnalysis.Status.DONE,
                "finished_at": timezone.now(),
                "requests_total": len(rows),
                "requests_done": len(rows),
                "unmatched_records": result.unmatched_records,
                "message": "",
            },
        )
    return result


def stored_record_usage_only(row: Request) -> RequestRecord:
    """The stored request with its usage alone, for a request whose body cannot be rebuilt."""
    return _record_of(row, body=None)


def _record_of(row: Request, *, body: Mapping[str, JSON] | None) -> RequestRecord:
    return RequestRecord(
        key=row.key,
        ordinal=row.ordinal,
        lineage=row.lineage,  # type: ignore[arg-type]
        provider=row.provider,
        platform=row.platform or row.provider,
        api=row.api,
        model=row.model,
        started_at=row.started_at,
        first_token_at=row.first_token_at,
        body=body,
        usage=stored_usage(row),
        status=row.status,
    )


def _progress(session_id: int, owner: str, *, total: int, done: int) -> None:
    if owner:
        SessionAnalysis.objects.filter(session_id=session_id, claimed_by=owner).update(
            requests_total=total, requests_done=done
        )


def _store(session: Session, rows: Sequence[Request], result: RecordsAnalysis, generation: int) -> bool:
    """Replace the session's stored results with ``result``, read at ``generation``; False, writing
    nothing, when a run that read a newer generation has stored its results already.

    A run overtaken by a newer ingest still stores what it read: under a steady stream of small
    batches a long session would otherwise never show any result. The newer run overwrites it.
    """
    by_key = {row.key: row for row in rows}
    with transaction.atomic():
        # Lock the session row: two analyses of one session write one after the other.
        Session.objects.select_for_update().filter(pk=session.pk).first()
        if SessionAnalysis.objects.filter(session=session, stored_generation__gt=generation).exists():
            return False
        SessionAnalysis.objects.filter(session=session).update(stored_generation=generation)
        RequestAnalysis.objects.filter(session=session).delete()
        analyses = [
            RequestAnalysis(
                request=by_key[r.key],
                session=session,
                label=r.label[:120],
                material=r.material,
                predicted_read=r.predicted_read,
                predicted_write=r.predicted_write,
                wire_allows=r.wire_allows,
                credited=r.credited,
                rewritten_tokens=r.rewritten,
                data=r.data,
            )
            for r in result.results
            if r.key in by_key
        ]
        RequestAnalysis.objects.bulk_create(analyses, batch_size=WRITE_BATCH)
        warnings_store(session=session, findings=result.findings, requests=by_key)
        session.warning_count = session.warnings.count()
        Session.objects.filter(pk=session.pk).update(warning_count=session.warning_count)
    return True


def warnings_store(
    *, session: Session, findings: Sequence[Finding], requests: Mapping[str, Request]
) -> list[Warning]:
    """Keep one Warning row per (kind, place) with the number of requests that showed it.

    Rows the analysis wrote before and no longer finds are removed; a row found again keeps its
    first-seen time. The row links the first request that showed it.
    """
    grouped: dict[tuple[str, str], tuple[Finding, int]] = {}
    for finding in findings:
        key = (finding.kind, finding.place[:300])
        seen = grouped.get(key)
        grouped[key] = (finding, 1) if seen is None else (seen[0], seen[1] + 1)
    owned = Warning.objects.filter(session=session).filter(kind__in=ANALYSIS_KINDS) | Warning.objects.filter(
        session=session, kind=Warning.Kind.INGEST_ERROR, place__startswith=CLIENT_RECORD_PLACE
    )
    existing = {(w.kind, w.place): w for w in owned}
    stale = [w.pk for key, w in existing.items() if key not in grouped]
    Warning.objects.filter(pk__in=stale).delete()
    kept: list[Warning] = []
    for (kind, place), (finding, count) in grouped.items():
        request = requests.get(finding.request_key) if finding.request_key else None
        row = existing.get((kind, place))
        if row is None:
            row = Warning.objects.create(
                session=session, request=request, kind=kind, place=place, message=finding.message, count=count
            )
        elif (row.count, row.message, row.request_id) != (
            count,
            finding.message,
            request.pk if request else None,
        ):
            row.count, row.message, row.request = count, finding.message, request
            row.save(update_fields=["count", "message", "request", "last_seen"])
        kept.append(row)
    return kept


# --- a log file, without the database ----------------------------------------------------------


@dataclass(slots=True)
class FileSession:
    """One session of a log file and its analysis, with the bad lines met while reading it."""

    external_id: str
    analysis: RecordsAnalysis
    errors: list[LineError]


def file_analyse(*, path: Path, format: str | None = None) -> list[FileSession]:
    """Analyse every session of a log file (or folder) as read, without storing anything."""
    sessions: list[FileSession] = []
    for imported in read_sessions(path, format=format):
        records: list[RequestRecord] = []
        events: list[EventRecord] = []
        errors: list[LineError] = []
        keys: set[str] = set()
        for item in imported.items:
            if isinstance(item, RequestRecord):
                if item.key not in keys:  # a repeated key is one request, as ingest stores it
                    keys.add(item.key)
                    records.append(item)
            elif isinstance(item, EventRecord):
                if item.type in CLIENT_RECORD_TYPES or is_boundary(item):
                    events.append(item)
            else:
                errors.append(item)
        if imported.fatal:
            errors.append(LineError(imported.path, None, "session", imported.fatal))
        # Ordinals count the session's requests in file order, as ingest numbers them.
        records = [replace(record, ordinal=i) for i, record in enumerate(records)]
        sessions.append(FileSession(imported.external_id, analyse_records(records, events), errors))
    return sessions
