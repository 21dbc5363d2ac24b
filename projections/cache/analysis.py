"""One entry point over a lineage's requests: render, diff, classify, predict and self-check.

``analyse_lineage(requests)`` gives, per request, everything the request page shows: its lineage
(decided from the bodies, see :mod:`projections.cache.predict.lineage`), the previous request's markers and
what became of them, the first change with its cause and remedy, the
credited / wire-allows / reported / predicted figures, the miss label and the warnings.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from projections.cache.attribution import AttributionIndex, AttributionMiss, blind_write_of
from projections.cache.cross_session import PrefixIndex, WriterRef, enter_writes
from projections.cache.explain.causes import FirstChange, classify_change
from projections.cache.explain.content_forms import marker_why
from projections.cache.explain.figures import Figures
from projections.cache.explain.warnings import (
    CacheWarning,
    marker_limit,
    model_error,
    over_credit,
    render_mismatch,
    unexplained_miss,
)
from projections.cache.known_causes import Known, Said, with_known_causes
from projections.cache.predict.cache_models import (
    CallInput,
    Prediction,
    cache_facts,
)
from projections.cache.predict.client_records import CreditRecord, WireReceipt, verify_wire_receipt
from projections.cache.predict.compaction import CompactionNote, body_compaction_note
from projections.cache.predict.lineage import LineageAssigner
from projections.cache.predict.prediction import CachePredictor
from projections.cache.render.diff import RequestDiff, TierShare, cacheability, diff_requests
from projections.cache.render.rendered_request import RenderedRequest, Tier
from projections.cache.render.rendering import Renderer
from projections.normalized import JSON, RequestRecord


@dataclass(frozen=True, slots=True)
class MarkerView:
    """A breakpoint of the previous request and what became of it in this one."""

    ordinal: int
    position: int
    tier: Tier
    identity: str
    prefix_tokens: int
    status: str
    why: str


@dataclass(frozen=True, slots=True)
class RequestAnalysis:
    """Everything Cachescope derives for one request."""

    key: str
    ordinal: int
    lineage: str
    model: str
    markers: tuple[MarkerView, ...]
    first_change: FirstChange | None
    figures: Figures
    label: str | None
    label_detail: str
    material: bool
    warnings: tuple[CacheWarning, ...]
    cacheability: Mapping[Tier, TierShare] = field(default_factory=dict)
    rendered: RenderedRequest | None = None
    previous: str | None = None
    """The key of the request this one was compared with; ``None`` for the first of its lineage."""
    read_from: WriterRef | None = None
    """The request that wrote the entry the predicted read lands on (in another session when its
    ``session`` is not empty)."""
    minimum_tokens: int | None = None
    """The model's minimum cacheable prefix the prediction was made with; ``None`` without a body."""
    compaction: CompactionNote | None = None
    """What the request did in a compaction, when it is a summarising call or the restart."""
    attribution: AttributionMiss | None = None
    """What Claude Code's attribution block did to the read, where an earlier write shows it."""
    idle_seconds: float | None = None
    """For a ``ttl-expired`` miss, how long its entry had gone unused (the remedy depends on it)."""

    def to_json(self) -> dict[str, JSON]:
        """The request's analysis as plain JSON (the shape the pages and the shell tools share)."""
        figures = self.figures
        change = self.first_change
        return {
            "ordinal": self.ordinal,
            "lineage": self.lineage,
            "model": self.model,
            "markers": [
                {
                    "ordinal": m.ordinal,
                    "position": m.position,
                    "tier": m.tier,
                    "prefix_tokens": m.prefix_tokens,
                    "status": m.status,
                }
                for m in self.markers
            ],
            "first_change": None
            if change is None
            else {"position": change.position, "tier": change.tier, "cause": change.cause.label},
            "figures": {
                "credited": figures.credited,
                "wire_allows": figures.wire_allows,
                "reported_read": figures.reported_read,
                "reported_write": figures.reported_write,
                "predicted_read": figures.predicted_read,
                "predicted_write": figures.predicted_write,
            },
            "label": self.label,
        }


class LineageAnalysis(list[RequestAnalysis]):
    """The analyses of a lineage's requests, in order."""

    def to_json(self) -> list[dict[str, JSON]]:
        """Every request's analysis as plain JSON."""
        return [analysis.to_json() for analysis in self]


def analyse_lineage(
    requests: Sequence[RequestRecord],
    credits: Mapping[str, CreditRecord] | None = None,
    receipts: Mapping[str, WireReceipt] | None = None,
    *,
    renderings: Mapping[str, RenderedRequest] | None = None,
    foreign: PrefixIndex | None = None,
) -> LineageAnalysis:
    """Analyse requests in the order given (start order); each is diffed against the request it
    continues in its lineage (see :func:`~projections.cache.predict.lineage.assign_lineages`), and one
    cache state is shared by all of them.

    ``credits`` and ``receipts`` are the client's own records, keyed by request key.
    ``renderings`` are requests already rendered from their bodies with their usage (a caller that
    had to render them anyway), by request key; the others are rendered here.
    ``foreign``: prefixes other sessions of the same source wrote; each enters the cache state at
    the moment it was written, so a request can read it (see :mod:`projections.cache.cross_session`).
    """
    given = renderings or {}
    renderer = Renderer()

    def render(request: RequestRecord) -> RenderedRequest | None:
        if request.body is None:
            return None
        return given.get(request.key) or renderer.render(
            request.provider, request.api, request.body, usage=request.usage
        )

    stream = LineageStream(requests, render, credits, receipts, foreign=foreign)
    analyses = list(stream)
    return LineageAnalysis(stream.named(analysis) for analysis in analyses)


KEPT_RENDERINGS = 8
"""Renderings a :class:`LineageStream` keeps besides each lineage's latest: enough for the requests
a fork or a retry continues, which sit a few requests back; an older parent is rendered again."""

_PROVISIONAL = "\x00lineage "
"""How a stream names a chain until every request is in: no real lineage name can start with it."""


class LineageStream:
    """:func:`analyse_lineage` one request at a time, holding a few renderings rather than all.

    Iterating yields each request's analysis in the order given, its ``rendered`` the request's own
    rendering; a consumer that drops it keeps memory flat however long the session is. ``render``
    gives a request's rendering, ``None`` for a request without a body; it is asked once for each
    request in turn, and again for an earlier request that a later one continues once that one's
    rendering was let go (so it must give the same rendering again).

    A lineage's name can change with a later request (see
    :class:`~projections.cache.predict.lineage.LineageAssigner`), so the analyses name each lineage
    provisionally; once the iteration is over, :meth:`named` and :meth:`names` give the real names.
    """

    def __init__(
        self,
        requests: Sequence[RequestRecord],
        render: Callable[[RequestRecord], RenderedRequest | None],
        credits: Mapping[str, CreditRecord] | None = None,
        receipts: Mapping[str, WireReceipt] | None = None,
        *,
        foreign: PrefixIndex | None = None,
        kept: int = KEPT_RENDERINGS,
    ) -> None:
        self._requests = requests
        self._render = render
        self._credits = credits or {}
        self._receipts = receipts or {}
        self._foreign = foreign
        self._kept = kept
        self._assigner = LineageAssigner()
        self._names: dict[str, str] | None = None

    def names(self) -> dict[str, str]:
        """Each provisional lineage name the analyses carry, with its real name."""
        if self._names is None:
            raise RuntimeError("a lineage stream names its lineages once every request is analysed")
        return self._names

    def named(self, analysis: RequestAnalysis) -> RequestAnalysis:
        """``analysis`` with its lineage's real name, also in the places of its warnings."""
        names = self.names()
        if analysis.lineage not in names:
            return analysis  # a request without a body keeps the lineage its importer gave
        warnings = tuple(replace(w, place=names.get(w.place, w.place)) for w in analysis.warnings)
        return replace(analysis, lineage=names[analysis.lineage], warnings=warnings)

    def __iter__(self) -> Iterator[RequestAnalysis]:
        credits, receipts, foreign = self._credits, self._receipts, self._foreign
        predictor = CachePredictor()
        by_key = {r.key: r for r in self._requests}
        writers = {r.key: WriterRef("", r.key, r.ordinal) for r in self._requests}
        recent: OrderedDict[str, CallInput] = OrderedDict()
        entered: datetime | None = None
        blind = AttributionIndex()
        for write in foreign.blind_writes() if foreign else ():
            found = blind_write_of(write)
            if found is not None:
                blind.add(found)
        for request in self._requests:
            rendered = self._render(request)
            if rendered is None:
                yield _usage_only(request, credits.get(request.key))
                continue
            if foreign and request.started_at is not None:
                enter_writes(predictor.state, foreign, entered, request.started_at, writers)
                entered = request.started_at
            facts = cache_facts(request.platform, rendered.model)
            chain, parent = self._assigner.add(request, rendered)
            lineage = f"{_PROVISIONAL}{chain}"
            parent_call = None
            if parent is not None:
                parent_call = self._call(parent, lineage, by_key, predictor, recent)
            prev = parent_call.rendered if parent_call is not None else None
            diff = None
            if prev is not None:
                diff = diff_requests(
                    prev,
                    rendered,
                    minimum=facts.minimum_tokens,
                    lookback=facts.lookback or 20,
                    expired_hashes=predictor.expired_hashes(request.started_at),
                )
            usage = request.usage
            reported_read = usage.cache_read if usage is not None else None
            attribution = blind.observe(
                rendered,
                key=request.key,
                ordinal=request.ordinal,
                at=request.started_at,
                read=reported_read,
                written=usage.cache_write if usage is not None else None,
                lookback=facts.lookback or 20,
                minimum=facts.minimum_tokens,
                endpoint=request.endpoint,
            )
            call = CallInput(
                request.key,
                rendered,
                request.platform,
                lineage,
                request.started_at,
                request.first_token_at,
                reported_read,
            )
            # The predictor judges a request against the previous call of its lineage: point that at
            # the request it continues, which after a fork is not the lineage's latest.
            if parent_call is not None:
                predictor.previous[lineage] = parent_call
            prediction = predictor.predict(call)
            recent[request.key] = call
            if len(recent) > self._kept:
                recent.popitem(last=False)
            known = Known(
                attribution, body_compaction_note(request, rendered, prev, by_key.get(parent or ""))
            )
            analysis = _analysis(
                request, rendered, prev, diff, prediction, credits.get(request.key), receipts, lineage, known
            )
            read_from = writers.get(prediction.read_from or "")
            yield replace(analysis, previous=parent, read_from=read_from, minimum_tokens=facts.minimum_tokens)
        names = self._assigner.names()
        self._names = {f"{_PROVISIONAL}{chain}": name for chain, name in enumerate(names)}

    def _call(
        self,
        key: str,
        lineage: str,
        by_key: Mapping[str, RequestRecord],
        predictor: CachePredictor,
        recent: OrderedDict[str, CallInput],
    ) -> CallInput:
        """The call of the earlier request ``key`` as it was predicted: the lineage's latest, a
        recent one, or else rendered again."""
        latest = predictor.previous.get(lineage)
        if latest is not None and latest.key == key:
            return latest
        call = recent.get(key)
        if call is not None:
            return call
        request = by_key[key]
        rendered = self._render(request)
        if rendered is None:
            raise ValueError(f"request {key}: rendered before, no rendering when asked again")
        reported_read = request.usage.cache_read if request.usage is not None else None
        return CallInput(
            key,
            rendered,
            request.platform,
            lineage,
            request.started_at,
            request.first_token_at,
            reported_read,
        )


def _analysis(
    request: RequestRecord,
    rendered: RenderedRequest,
    prev: RenderedRequest | None,
    diff: RequestDiff | None,
    prediction: Prediction,
    credit: CreditRecord | None,
    receipts: Mapping[str, WireReceipt],
    lineage: str,
    known: Known,
) -> RequestAnalysis:
    markers: tuple[MarkerView, ...] = ()
    change: FirstChange | None = None
    if diff is not None and prev is not None:
        sublabel = None
        if diff.first_change is not None:
            unit = diff.first_change
            change = FirstChange(
                unit.position,
                unit.tier,
                unit.identity,
                unit.byte_offset,
                classify_change(prev, rendered, unit),
            )
            sublabel = change.cause.sublabel
        markers = tuple(
            MarkerView(
                s.marker.ordinal,
                s.marker.position,
                s.marker.tier,
                s.marker.identity,
                s.marker.prefix_tokens,
                s.status,
                marker_why(s.status, s.why, sublabel, change.identity if change else ""),
            )
            for s in diff.markers
        )
    usage = request.usage
    wire_allows = diff.wire_allows if diff is not None else None
    bound = max(prediction.read, wire_allows or 0)
    said = with_known_causes(
        Said(prediction.label, prediction.detail, prediction.material, change, bound), rendered, known
    )
    change = said.change
    figures = Figures(
        credited=credit.credited_tokens if credit is not None else None,
        wire_allows=wire_allows,
        reported_read=usage.cache_read if usage is not None else None,
        reported_write=usage.cache_write if usage is not None else None,
        predicted_read=prediction.read,
        predicted_write=prediction.write,
    )
    place = change.identity if change is not None else lineage
    receipt = receipts.get(request.key)
    warnings = [
        marker_limit(request.key, lineage, len(rendered.markers)),
        render_mismatch(request.key, lineage, verify_wire_receipt(receipt, rendered))
        if receipt is not None
        else None,
        # With no earlier request in the lineage, what any stored entry could serve is the bound.
        over_credit(
            request.key, place, figures.credited, prediction.read if wire_allows is None else wire_allows
        ),
        unexplained_miss(
            request.key,
            lineage,
            figures.reported_read,
            prediction.read,
            rendered.total_tokens,
            identical_in_ttl=prediction.read > 0,
        ),
        model_error(
            request.key,
            lineage,
            figures.reported_read,
            said.bound,
            form_switch=change.identity
            if change is not None and change.cause.sublabel == "string-vs-block"
            else None,
        ),
    ]
    return RequestAnalysis(
        key=request.key,
        ordinal=request.ordinal,
        lineage=lineage,
        model=rendered.model,
        markers=markers,
        first_change=change,
        figures=figures,
        label=said.label,
        label_detail=said.detail,
        idle_seconds=prediction.idle_seconds,
        material=said.material,
        warnings=tuple(w for w in warnings if w is not None),
        cacheability=diff.cacheability if diff is not None else cacheability(rendered, 0),
        compaction=known.compaction,
        attribution=known.attribution,
        rendered=rendered,
    )


def _usage_only(request: RequestRecord, credit: CreditRecord | None) -> RequestAnalysis:
    usage = request.usage
    figures = Figures(
        credited=credit.credited_tokens if credit is not None else None,
        wire_allows=None,
        reported_read=usage.cache_read if usage is not None else None,
        reported_write=usage.cache_write if usage is not None else None,
        predicted_read=None,
        predicted_write=None,
    )
    return RequestAnalysis(
        request.key, request.ordinal, request.lineage, request.model, (), None, figures, None, "", False, ()
    )
