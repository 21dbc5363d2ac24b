"""The cache analysis on the request and session pages, and the view that re-queues a session's analysis.

The request page's verdict (label, what it means, remedy, materiality, warnings) is the engine's
:func:`~projections.cache.explain.verdict.verdict`, the one ``manage.py explain`` prints; the side-by-side
view of the change is built in :mod:`dashboard.requests.change_display` and the overview's fleet panels
in :mod:`dashboard.fleet.cache_panels`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from dashboard.access.roles import OPERATOR, role_required
from dashboard.analysis.cause_costs import request_cause_costs
from dashboard.models import Request, RequestAnalysis, Session, SessionAnalysis
from dashboard.requests.change_display import change_sides
from dashboard.sessions.figures import session_figures_cached
from projections.cache.explain.verdict import verdict
from projections.cache.render.render_record import markers_sent
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
        "markers_sent": markers_sent(data, has_body=call.has_body),
        "verdict": said,
        "figures": data.get("figures", {}),
        "first_change": change,
        "previous_request": previous,
        "read_from": _read_from_request(call, data),
        "change_sides": change_sides(previous, call, change) if change is not None else None,
        "remedy": said.remedy,
        "provider_disagrees": any(w.kind == "provider-disagrees" for w in said.warnings),
        "cause_costs": request_cause_costs(data=data, model=call.model),
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
    """The session page's cost, its charts (requests and cacheability per turn) and its analysis job."""
    job = SessionAnalysis.objects.filter(session=session).first()
    figures = session_figures_cached(session=session, analysis=job)
    return {
        "analysis_job": job,
        "cost": figures.cost,
        "requests_chart": figures.requests_chart,
        "cacheability_chart": figures.cacheability_chart,
        "material_misses": figures.material_misses,
        "compactions": figures.compactions,
        "attribution_endpoints": figures.attribution,
        "costliest_miss": figures.costliest_miss,
    }


@require_POST
@role_required(OPERATOR)
def session_analyse(request: HttpRequest, session_id: int) -> HttpResponse:
    """Queue the session's analysis again and return to its page."""
    from dashboard.analysis.stored_sessions import analysis_request  # the analysis engine loads on first use

    session = get_object_or_404(Session, pk=session_id)
    if analysis_request(session_id=session.pk):
        from dashboard.worker.tasks import analyse_session_task

        analyse_session_task.delay_on_commit(session.pk)  # type: ignore[attr-defined]
    return HttpResponseRedirect(session.get_absolute_url())
