"""The cache analysis of one session's requests with its client records: the same for a log file
and for the store.

Requests with bodies go through :func:`~projections.cache.analysis.analyse_lineage`; a session
without any body goes through the transcript predictor. Client records (``cache/credit``,
``cache/render-record``, ``cache/log`` events) are matched to requests by their ``requestRef``:
equal to the request's key, else ``#N`` or ``N`` naming the request's ordinal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from projections.cache.analysis import RequestAnalysis, analyse_lineage
from projections.cache.client_records import (
    CreditRecord,
    ReceiptError,
    parse_credit_event,
    verify_render_record_event,
)
from projections.cache.cross_session import PrefixIndex, read_from_json
from projections.cache.provider_check import note_provider_diagnoses
from projections.cache.providers import UnknownModelError, cache_facts
from projections.cache.render_record import render_record
from projections.cache.rendered_request import RenderedRequest
from projections.cache.results import (
    CLIENT_RECORD_PLACE,
    Finding,
    HostNote,
    RecordsAnalysis,
    RequestResult,
    finding_of,
    rewritten_tokens,
)
from projections.cache.transcript_analysis import analyse_transcript
from projections.cache.warnings import render_mismatch
from projections.normalized import JSON, EventRecord, RequestRecord

CLIENT_RECORD_TYPES = ("cache/credit", "cache/render-record", "cache/log")
_ORDINAL_REF = re.compile(r"#?(\d+)")


def analyse_records(
    records: Sequence[RequestRecord],
    events: Sequence[EventRecord] = (),
    *,
    renderings: Mapping[str, RenderedRequest] | None = None,
    earlier: Sequence[Finding] = (),
    foreign: PrefixIndex | None = None,
) -> RecordsAnalysis:
    """Analyse a session's requests with its client records and boundary events.

    ``renderings``: bodies already rendered, by request key (see :func:`analyse_lineage`).
    ``earlier``: findings met before the analysis (a stored request that could not be rebuilt);
    they come first in the findings. Each result's ``data["warnings"]`` lists the findings of
    its own request, as ``{"kind", "message"}``.
    ``foreign``: prefixes other sessions of the same source wrote inside the TTL window (see
    :mod:`projections.cache.cross_session`); ``data["read_from"]`` names the request that wrote
    what a request reads, with its ``session`` when that is another session.
    """
    out = RecordsAnalysis(findings=list(earlier))
    credits, render_records = _client_records(records, events, out)
    ordered = sorted(records, key=_start_order)
    if any(r.body is not None for r in records):
        results, rendered = _analyse_bodies(ordered, credits, out.findings, renderings or {}, foreign)
        _check_render_records(render_records, rendered, out.findings)
    else:
        results = analyse_transcript(ordered, credits, events, out.findings, foreign)
    out.results = sorted(results, key=lambda r: int(r.data["ordinal"]))
    note_provider_diagnoses(records, out.results, out.findings)
    _attach_warnings(out)
    return out


def _client_records(
    records: Sequence[RequestRecord], events: Sequence[EventRecord], out: RecordsAnalysis
) -> tuple[dict[str, CreditRecord], list[tuple[EventRecord, RequestRecord]]]:
    """The client's credits by request key and its render records with their requests.

    Host log lines become the host's notes; records naming no request are counted on ``out``.
    """
    by_key = {r.key: r for r in records}
    by_ordinal = {r.ordinal: r for r in records}
    credits: dict[str, CreditRecord] = {}
    render_records: list[tuple[EventRecord, RequestRecord]] = []
    for event in events:
        if event.type not in CLIENT_RECORD_TYPES:
            continue
        request = _match(event.data.get("requestRef"), by_key, by_ordinal)
        if event.type == "cache/log":
            out.host_notes.append(_host_note(event, request))
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
    return credits, render_records


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


def _host_note(event: EventRecord, request: RequestRecord | None) -> HostNote:
    line, level = event.data.get("line"), event.data.get("level")
    return HostNote(
        seq=event.seq,
        time=event.time,
        level=level if isinstance(level, str) else "",
        line=line if isinstance(line, str) else json.dumps(event.data, sort_keys=True),
        request_key=request.key if request else None,
    )


def _unreadable(event: EventRecord, error: Exception, request: RequestRecord | None) -> Finding:
    return Finding(
        "ingest-error",
        f"{CLIENT_RECORD_PLACE} seq {event.seq}",
        f"{event.type} at seq {event.seq} cannot be read: {error}",
        request.key if request else None,
        seq=event.seq,
    )


def _start_order(record: RequestRecord) -> tuple[float, int]:
    started = record.started_at.timestamp() if record.started_at is not None else float("inf")
    return started, record.ordinal


def _check_render_records(
    render_records: Sequence[tuple[EventRecord, RequestRecord]],
    rendered: Mapping[str, RenderedRequest],
    findings: list[Finding],
) -> None:
    """Compare each client render record with what the engine rendered of its request."""
    for event, request in render_records:
        ours = rendered.get(request.key)
        if ours is None:
            continue
        try:
            mismatches = verify_render_record_event(event.data, ours)
        except ReceiptError as error:
            findings.append(_unreadable(event, error, request))
            continue
        found = render_mismatch(request.key, request.lineage, mismatches)
        if found is not None:
            findings.append(finding_of(found))


def _attach_warnings(out: RecordsAnalysis) -> None:
    by_request: dict[str, list[JSON]] = {}
    for finding in out.findings:
        if finding.request_key is not None:
            by_request.setdefault(finding.request_key, []).append(
                {"kind": finding.kind, "message": finding.message}
            )
    for result in out.results:
        result.data["warnings"] = by_request.get(result.key, [])


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
    foreign: PrefixIndex | None,
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
            record = replace(record, body=None, line=None)
        usable.append(record)
    analyses = analyse_lineage(usable, credits=credits, renderings=renderings, foreign=foreign)
    written: set[str] = set()
    by_key: dict[str, RequestAnalysis] = {}
    results: list[RequestResult] = []
    rendered: dict[str, RenderedRequest] = {}
    for original, record, analysis in zip(ordered, usable, analyses, strict=True):
        findings.extend(finding_of(w) for w in analysis.warnings)
        prev = by_key.get(analysis.previous) if analysis.previous is not None else None
        results.append(_body_result(record, analysis, prev, written, has_body=original.body is not None))
        if analysis.rendered is not None:
            rendered[record.key] = analysis.rendered
            by_key[record.key] = analysis
            minimum = cache_facts(record.platform, record.model).minimum_tokens
            markers = render_record(analysis.rendered).markers
            written.update(m.prefix_hash for m in markers if m.prefix_tokens >= minimum)
    return results, rendered


def _body_result(
    record: RequestRecord,
    analysis: RequestAnalysis,
    prev: RequestAnalysis | None,
    written: set[str],
    *,
    has_body: bool,
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
    data["read_from"] = read_from_json(analysis.read_from)
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
                "prefix_hash": m.prefix_hash,
                "ttl": m.ttl,
            }
            for m in render_record(rendered).markers
        ]
        data["prompt_tokens"] = rendered.total_tokens
        before = max(
            (rendered.prefix_tokens(p) for p, h in enumerate(rendered.prefix_hashes) if h in written),
            default=0,
        )
        rewritten = rewritten_tokens(record.usage, before)
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
        has_body=has_body,
    )
