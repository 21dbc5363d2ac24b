"""The cache analysis on the request and session pages, and the view that re-queues a session's analysis.

The request page's verdict (label, what it means, remedy, materiality, warnings) is the engine's
:func:`~projections.cache.verdict.verdict`, the one ``manage.py explain`` prints; the side-by-side
view of the change is built in :mod:`dashboard.views.change_display` and the overview's fleet panels
in :mod:`dashboard.views.fleet_cache`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.charts import CacheabilityBar, RequestBar, session_cacheability_chart, session_requests_chart
from dashboard.models import Request, RequestAnalysis, Session, SessionAnalysis
from dashboard.roles import OPERATOR, role_required
from dashboard.views.change_display import change_sides
from projections.cache.verdict import verdict
from projections.normalized import JSON

# --- the request page ----------------------------------------------------------------------------


def request_analysis_context(call: Request) -> dict[str, Any]:
    """What the request page shows of the analysis: markers, first change, figures, label, remedy."""
    analysis = RequestAnalysis.objects.filter(request=call).first()
    job = SessionAnalysis.objects.filter(session_id=call.session_id).first()
    if analysis is None:
        return {"analysis": None, "analysis_job": job}
    data = analysis.data
    said = verdict(data, has_body=call.has_body)
    change = data.get("first_change")
    previous = _previous_request(call, data)
    return {
        "analysis": analysis,
        "analysis_job": job,
        "analysis_data": data,
        "verdict": said,
        "figures": data.get("figures", {}),
        "first_change": change,
        "previous_request": previous,
        "read_from": _read_from_request(call, data),
        "change_sides": change_sides(previous, call, change) if change is not None else None,
        "remedy": said.remedy,
        "provider_disagrees": any(w.kind == "provider-disagrees" for w in said.warnings),
    }


def _previous_request(call: Request, data: dict[str, JSON]) -> Request | None:
    previous = data.get("previous")
    if not isinstance(previous, dict):
        return None
    return Request.objects.filter(session_id=call.session_id, key=previous.get("key")).first()


def _read_from_request(call: Request, data: dict[str, JSON]) -> Request | None:
    """The request that wrote the prefix this one reads: in another session of the source when the
    analysis names one (a compaction, a subagent, a parallel session), else in this session."""
    read_from = data.get("read_from")
    if not isinstance(read_from, dict):
        return None
    other = read_from.get("session")
    session_id = int(other) if isinstance(other, str) and other.isdigit() else call.session_id
    writers = Request.objects.filter(session_id=session_id, key=read_from.get("key"))
    return writers.select_related("session").first()


# --- the session page ----------------------------------------------------------------------------


def session_analysis_context(session: Session) -> dict[str, Any]:
    """The session page's charts (requests and cacheability per turn) and its analysis job."""
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
    return {
        "analysis_job": SessionAnalysis.objects.filter(session=session).first(),
        # A chart of one request, or of requests that reported nothing, says nothing the figures
        # above it do not: it is left out rather than drawn empty.
        "requests_chart": session_requests_chart(bars) if _tells(bars) else None,
        "cacheability_chart": session_cacheability_chart(shares) if len(shares) > 1 else None,
        "material_misses": RequestAnalysis.objects.filter(session=session).material_misses().count(),
    }


def _tells(bars: list[RequestBar]) -> bool:
    """Whether a requests chart would show anything: two requests or more, some with usage."""
    reported = [bar for bar in bars if any(n for n in (bar.read, bar.write, bar.uncached))]
    return len(bars) > 1 and bool(reported)


@require_POST
@role_required(OPERATOR)
def session_analyse(request: HttpRequest, session_id: int) -> HttpResponse:
    """Queue the session's analysis again and return to its page."""
    from dashboard.services.analysis import analysis_request  # the analysis engine loads on first use

    session = get_object_or_404(Session, pk=session_id)
    if analysis_request(session_id=session.pk):
        from dashboard.tasks import analyse_session_task

        analyse_session_task.delay_on_commit(session.pk)  # type: ignore[attr-defined]
    return HttpResponseRedirect(session.get_absolute_url())
