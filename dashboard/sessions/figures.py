"""The session page's figures over all of a session's requests: its cost and its two per-request
charts, kept in the cache while the session, its analysis and the price table stay as they were.

A 2,000-request session's page would otherwise price every call and build two charts of 2,000
bars on every view. The cache key names everything the figures are made of — the session's
requests (their number and token sums), the analysis stored and the prices — so a new request, a
new analysis or a price change reads as another key and the figures are made again.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db.models import F
from django.urls import reverse

from dashboard.analysis.cause_costs import (
    AttributionEndpoint,
    CompactionCosts,
    attribution_by_endpoint,
    session_compactions,
)
from dashboard.costs.pricing import SessionCost, prices_load
from dashboard.costs.session_costs import prices_version, session_cost, session_inputs_key
from dashboard.models import Request, RequestAnalysis, Session, SessionAnalysis
from dashboard.web.charts import (
    CacheabilityBar,
    RequestBar,
    session_cacheability_chart,
    session_requests_chart,
)

FIGURES_CACHE_SECONDS = 3600


@dataclass(frozen=True)
class SessionFigures:
    """What the session page shows of all its requests at once."""

    cost: SessionCost
    requests_chart: dict[str, Any] | None
    """Reported cache read, write and uncached input per request; None when it would show nothing."""
    cacheability_chart: dict[str, Any] | None
    material_misses: int
    compactions: CompactionCosts
    attribution: list[AttributionEndpoint]
    """What Claude Code's attribution block did, per endpoint the session sent to."""
    costliest_miss: CostliestMiss | None = None


@dataclass(frozen=True)
class CostliestMiss:
    """The session's material miss that cost the most, for the page to lead to it.

    Ranked by its miss cost (what the request paid beyond a full hit, :mod:`projections.money`),
    then by its cost for analyses stored before miss costs were.
    """

    url: str
    number: int
    cost: Decimal | None
    reprocessed: int | None
    label: str


def costliest_miss(session: Session) -> CostliestMiss | None:
    """The material miss of ``session`` with the highest miss cost (then cost, then the most
    re-processed tokens among unpriced ones); one query."""
    miss = (
        RequestAnalysis.objects.filter(session=session)
        .material_misses()
        .select_related("request")
        .order_by(
            F("miss_cost").desc(nulls_last=True),
            F("cost").desc(nulls_last=True),
            F("wasted_tokens").desc(nulls_last=True),
            "request__ordinal",
        )
        .first()
    )
    if miss is None:
        return None
    return CostliestMiss(
        url=miss.request.get_absolute_url(),
        number=miss.request.ordinal + 1,
        cost=miss.cost,
        reprocessed=miss.wasted_tokens,
        label=miss.label,
    )


def session_figures_cached(*, session: Session, analysis: SessionAnalysis | None) -> SessionFigures:
    """:func:`session_figures`, from the cache while nothing they are made of has changed."""
    key = session_figures_key(session=session, analysis=analysis)
    figures: SessionFigures | None = cache.get(key)
    if figures is None:
        figures = session_figures(session=session, analysis=analysis)
        cache.set(key, figures, FIGURES_CACHE_SECONDS)
    return figures


def session_figures_key(*, session: Session, analysis: SessionAnalysis | None) -> str:
    """A key naming the session's requests, its stored analysis and the price table."""
    return f"session-figures-2:{session_inputs_key(session=session, analysis=analysis)}:{prices_version()}"


def session_figures(*, session: Session, analysis: SessionAnalysis | None) -> SessionFigures:
    """The session's cost and its requests and cacheability charts, from its stored requests."""
    # Plain tuples, and only the cacheability part of each analysis: a 2,000-request session
    # would otherwise build 4,000 model instances and decode every analysis in full.
    rows = (
        Request.objects.filter(session=session)
        .order_by("ordinal")
        .values_list(
            "id",
            "ordinal",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "uncached_input_tokens",
            "analysis__id",
            "analysis__label",
            "analysis__material",
            "analysis__predicted_read",
            "analysis__data__cacheability",
        )
    )
    bars: list[RequestBar] = []
    shares: list[CacheabilityBar] = []
    prices = prices_load()
    # One reverse() for the whole chart: a 2,000-request session would otherwise pay 2,000.
    url_of = reverse("dashboard:request", args=[0]).removesuffix("0/") + "{}/"
    for pk, ordinal, read, write_5m, write_1h, uncached, analysed, label, material, predicted, tiers in rows:
        url = url_of.format(pk)
        write = None if write_5m is None and write_1h is None else (write_5m or 0) + (write_1h or 0)
        bars.append(
            RequestBar(
                number=ordinal + 1,
                url=url,
                read=read,
                write=write,
                uncached=uncached,
                predicted_read=predicted if analysed else None,
                material=bool(analysed and material),
                label=(label or "") if analysed else "",
            )
        )
        if isinstance(tiers, dict):
            shares.append(
                CacheabilityBar(
                    number=ordinal + 1,
                    url=url,
                    shared={tier: int(share["shared"]) for tier, share in tiers.items()},
                    rest=sum(int(share["rest"]) for share in tiers.values()),
                )
            )
    return SessionFigures(
        cost=session_cost(session=session, analysis=analysis),
        # A chart of one request, or of requests that reported nothing, says nothing the figures
        # above it do not: it is left out rather than drawn empty.
        requests_chart=session_requests_chart(bars) if _tells(bars) else None,
        cacheability_chart=session_cacheability_chart(shares) if len(shares) > 1 else None,
        material_misses=RequestAnalysis.objects.filter(session=session).material_misses().count(),
        compactions=session_compactions(session_id=session.pk, prices=prices),
        attribution=attribution_by_endpoint(RequestAnalysis.objects.filter(session=session), prices),
        costliest_miss=costliest_miss(session),
    )


def _tells(bars: list[RequestBar]) -> bool:
    """Whether a requests chart would show anything: two requests or more, some with usage."""
    reported = [bar for bar in bars if any(n for n in (bar.read, bar.write, bar.uncached))]
    return len(bars) > 1 and bool(reported)
