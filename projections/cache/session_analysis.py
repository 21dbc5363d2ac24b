"""The cache analysis of one session's requests with its client records: the same for a log file
and for the store.

Requests with bodies go through :class:`~projections.cache.analysis.LineageStream` one at a time,
so a session is analysed holding a few renderings, not all of them; a session without any body goes
through the transcript predictor. Client records (``cache/credit``,
``cache/render-record``, ``cache/log`` events) are matched to requests by their ``requestRef``:
equal to the request's key, else ``#N`` or ``N`` naming the request's ordinal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from projections.cache.analysis import LineageStream, RequestAnalysis
from projections.cache.cross_session import PrefixIndex, read_from_json
from projections.cache.explain.provider_check import note_provider_diagnoses
from projections.cache.explain.warnings import render_mismatch
from projections.cache.predict.cache_models import UnknownModelError, cache_facts
from projections.cache.predict.client_records import (
    CreditRecord,
    ReceiptError,
    parse_credit_event,
    verify_render_record_event,
)
from projections.cache.render.rebuild import StoredRequestError
from projections.cache.render.render_record import RecordMarker, render_record
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import Renderer
from projections.cache.results import (
    CLIENT_RECORD_PLACE,
    Finding,
    HostNote,
    RecordsAnalysis,
    RequestResult,
    finding_of,
)
from projections.cache.transcript_analysis import analyse_transcript
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
    bodies: RequestBodies | None = None,
) -> RecordsAnalysis:
    """Analyse a session's requests with its client records and boundary events.

    ``renderings``: bodies already rendered, by request key (see :func:`analyse_lineage`).
    ``bodies``: where the bodies are when the records do not carry them (a store); each request's
    is rendered in turn and let go, so the analysis holds a few renderings, not the session's. A
    stored request that cannot be rebuilt is analysed from its usage, with an ``ingest-error``.
    ``earlier``: findings met before the analysis; they come first in the findings. Each result's
    ``data["warnings"]`` lists the findings of its own request, as ``{"kind", "message"}``.
    ``foreign``: prefixes other sessions of the same source wrote inside the TTL window (see
    :mod:`projections.cache.cross_session`); ``data["read_from"]`` names the request that wrote
    what a request reads, with its ``session`` when that is another session.
    """
    out = RecordsAnalysis(findings=list(earlier))
    credits, render_records = _client_records(records, events, out)
    ordered = sorted(records, key=start_order)
    source = bodies if bodies is not None else _CarriedBodies(renderings or {})
    walk = None
    if any(source.has_body(r) for r in records):
        walk = _analyse_bodies(ordered, credits, render_records, source, foreign)
        # Rebuilding comes before the analysis: a request that could not be rebuilt is named first.
        out.findings[len(earlier) : len(earlier)] = walk.unbuilt
    if walk is not None and walk.built:
        out.findings += walk.findings
        results = walk.results
    else:
        results = analyse_transcript(ordered, credits, events, out.findings, foreign)
    out.results = sorted(results, key=lambda r: int(r.data["ordinal"]))
    note_provider_diagnoses(records, out.results, out.findings)
    _attach_warnings(out)
    return out


class RequestBodies(Protocol):
    """Where :func:`analyse_records` finds the bodies of requests whose records carry none (a store
    keeps a body as units). Asked in start order, once for each request, and again for an earlier
    request that a later one continues, which must render the same again."""

    def has_body(self, record: RequestRecord) -> bool:
        """Whether ``record`` was logged with its body."""
        ...

    def render(self, record: RequestRecord) -> RenderedRequest:
        """The body of ``record`` rendered with its usage; raises :class:`StoredRequestError` when
        it cannot be rebuilt as it was sent."""
        ...


class _CarriedBodies:
    """The bodies the records carry: the caller's renderings where it gave them, else rendered here."""

    def __init__(self, renderings: Mapping[str, RenderedRequest]) -> None:
        self._renderings = renderings
        self._renderer = Renderer()

    def has_body(self, record: RequestRecord) -> bool:
        return record.body is not None

    def render(self, record: RequestRecord) -> RenderedRequest:
        assert record.body is not None
        return self._renderings.get(record.key) or self._renderer.render(
            record.provider, record.api, record.body, usage=record.usage
        )


def start_order(record: RequestRecord) -> tuple[float, int]:
    """The order the analysis walks a session's requests in: by start time, then ordinal; a request
    without a start time last."""
    started = record.started_at.timestamp() if record.started_at is not None else float("inf")
    return started, record.ordinal


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


def _render_record_findings(
    event: EventRecord, request: RequestRecord, ours: RenderedRequest
) -> list[Finding]:
    """A client render record compared with what the engine rendered of its request."""
    try:
        mismatches = verify_render_record_event(event.data, ours)
    except ReceiptError as error:
        return [_unreadable(event, error, request)]
    found = render_mismatch(request.key, request.lineage, mismatches)
    return [] if found is None else [finding_of(found)]


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


@dataclass(slots=True)
class _BodyWalk:
    """What the walk over a session's bodies found."""

    results: list[RequestResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Unknown models, then each request's warnings in start order, then the render records'."""
    unbuilt: list[Finding] = field(default_factory=list)
    """Stored requests that could not be rebuilt, by ordinal."""
    built: set[str] = field(default_factory=set)
    """Keys of the requests whose body was at hand (rebuilt, for a store)."""


def _analyse_bodies(
    ordered: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord],
    render_records: Sequence[tuple[EventRecord, RequestRecord]],
    bodies: RequestBodies,
    foreign: PrefixIndex | None,
) -> _BodyWalk:
    walk = _BodyWalk()
    unknown_models: list[Finding] = []
    unbuilt: list[tuple[int, Finding]] = []

    def render(record: RequestRecord) -> RenderedRequest | None:
        if not bodies.has_body(record):
            return None
        try:
            rendered = bodies.render(record)
        except StoredRequestError as error:
            place = f"{CLIENT_RECORD_PLACE} request {record.ordinal}"
            unbuilt.append((record.ordinal, Finding("ingest-error", place, str(error), record.key)))
            return None
        walk.built.add(record.key)
        if not _known_model(record):
            unknown_models.append(
                Finding(
                    "model-error",
                    f"model {record.model}",
                    f"no cache facts for platform {record.platform!r}, model {record.model!r}: "
                    "its requests are shown without a prediction",
                    record.key,
                )
            )
            return None
        return rendered

    # The render records are checked as their requests go by; their findings keep the records' order.
    checks: dict[str, list[tuple[int, EventRecord, RequestRecord]]] = {}
    for index, (event, request) in enumerate(render_records):
        checks.setdefault(request.key, []).append((index, event, request))
    checked: dict[int, list[Finding]] = {}
    stream = LineageStream(ordered, render, credits, foreign=foreign)
    compared: dict[str, int] = {}
    warnings: list[Finding] = []
    for record, analysis in zip(ordered, stream, strict=True):
        warnings.extend(finding_of(w) for w in analysis.warnings)
        prev = analysis.previous
        previous = None if prev is None or prev not in compared else (compared[prev], prev)
        has_body = record.key in walk.built
        walk.results.append(_body_result(record, analysis, previous, has_body=has_body))
        rendered = analysis.rendered
        if rendered is not None:
            compared[record.key] = record.ordinal
            for index, event, request in checks.get(record.key, ()):
                checked[index] = _render_record_findings(event, request, rendered)
    # Every request is in: the lineages have their names.
    names = stream.names()
    for result in walk.results:
        lineage = result.data["lineage"]
        if isinstance(lineage, str) and lineage in names:
            result.data["lineage"] = names[lineage]
    walk.findings = unknown_models + [replace(f, place=names.get(f.place, f.place)) for f in warnings]
    for index in sorted(checked):
        walk.findings += checked[index]
    walk.unbuilt = [finding for _, finding in sorted(unbuilt, key=lambda item: item[0])]
    return walk


def _body_result(
    record: RequestRecord,
    analysis: RequestAnalysis,
    prev: tuple[int, str] | None,
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
    data["previous"] = None if prev is None else {"ordinal": prev[0], "key": prev[1]}
    data["read_from"] = read_from_json(analysis.read_from)
    data["label_detail"] = analysis.label_detail
    data["idle_seconds"] = analysis.idle_seconds
    data["material"] = analysis.material
    rendered = analysis.rendered
    if rendered is not None:
        data["cacheability"] = {
            tier: {"shared": share.shared, "rest": share.rest}
            for tier, share in analysis.cacheability.items()
        }
        data["record"] = [
            _record_row(m, record.endpoint) for m in render_record(rendered, blind=True).markers
        ]
        data["prompt_tokens"] = rendered.total_tokens
    else:
        data["cacheability"] = None
        data["record"] = []
        data["prompt_tokens"] = record.usage.prompt_total if record.usage else None
    data["minimum_tokens"] = analysis.minimum_tokens
    data["compaction"] = None if analysis.compaction is None else analysis.compaction.to_json()
    data["attribution"] = None if analysis.attribution is None else analysis.attribution.to_json()
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
        has_body=has_body,
    )


def _record_row(marker: RecordMarker, endpoint: str) -> dict[str, JSON]:
    """One marker of the stored render record; the hash without the attribution block (and the
    endpoint its cache lives at) only past one."""
    row: dict[str, JSON] = {
        "ordinal": marker.ordinal,
        "position": marker.position,
        "tier": marker.tier,
        "identity": marker.identity,
        "prefix_tokens": marker.prefix_tokens,
        "prefix_hash": marker.prefix_hash,
        "ttl": marker.ttl,
        "automatic": marker.automatic,
    }
    if marker.blind_hash is not None:
        row["blind_hash"] = marker.blind_hash
        row["attribution"] = marker.attribution
        row["endpoint"] = endpoint
    return row
