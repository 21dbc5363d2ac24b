"""The session page's event timeline (a page of events read as a conversation, with "more"), one
event's whole JSON where the timeline cuts it, and its host notes (the host's own cache log lines,
searchable)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.models import Event, HostNote, Session
from dashboard.models.sessions import EVENTS_PER_PAGE
from dashboard.sessions.timeline_page import events_page
from dashboard.web.query_params import text_param

HOST_NOTES_SHOWN = 100
TIMELINE_TEMPLATE = "dashboard/_session_timeline.html"


def events_context(session: Session, params: QueryDict) -> dict[str, Any]:
    """The timeline page that ``from`` (or ``page``) and ``type`` ask for."""
    # An unstorable type is ignored: the select beside the timeline shows "all types" then.
    event_type = text_param(params, "type", {})
    return events_page(session=session, start=_start_seq(params), event_type=event_type)


def _start_seq(params: QueryDict) -> int:
    """The first seq to show: ``from``, else the start of page ``page`` (the links
    :meth:`Session.event_url` writes); 0 for anything unreadable."""
    for name, scale in (("from", 1), ("page", EVENTS_PER_PAGE)):
        value = params.get(name, "")
        if value.isdigit():
            number = int(value)
            return number if scale == 1 else max(0, number - 1) * scale
    return 0


@require_GET
@vary_on_headers("HX-Request")
def session_events_hx(request: HttpRequest, session_id: int) -> HttpResponse:
    """The timeline for a new filter, or (``more=1``) only the next page's items to append."""
    session = get_object_or_404(Session, pk=session_id)
    context = {"session": session, **events_context(session, request.GET)}
    partial = "timeline-page" if request.GET.get("more") else "event-timeline"
    return render(request, f"{TIMELINE_TEMPLATE}#{partial}", context)


@require_GET
def session_event_json(request: HttpRequest, session_id: int, seq: int) -> JsonResponse:
    """One event's data, whole, as JSON: where the timeline's cut raw view links."""
    event = get_object_or_404(Event, session_id=session_id, seq=seq)
    return JsonResponse(event.data, safe=False, json_dumps_params={"ensure_ascii": False, "indent": 1})


def host_notes_context(session: Session, params: QueryDict) -> dict[str, Any]:
    """The session's host notes matching the ``notes`` search, at most :data:`HOST_NOTES_SHOWN`."""
    search = text_param(params, "notes", {})
    notes = HostNote.objects.filter(session=session).search(search).select_related("request")
    shown = list(notes[: HOST_NOTES_SHOWN + 1])
    return {
        "host_notes": shown[:HOST_NOTES_SHOWN],
        "host_notes_more": len(shown) > HOST_NOTES_SHOWN,
        "host_notes_search": search,
        "host_notes_any": bool(shown) or HostNote.objects.filter(session=session).exists(),
    }


@require_GET
def session_host_notes_hx(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=session_id)
    context = {"session": session, **host_notes_context(session, request.GET)}
    return render(request, "dashboard/_session_host_notes.html#host-notes-results", context)
