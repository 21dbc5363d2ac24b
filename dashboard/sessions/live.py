"""The live panel of a session being recorded: its latest calls, refreshed every few seconds.

The session page includes the panel while the session had activity recently; the panel then polls
``session_live_hx`` every 5 s (htmx), which answers 286 to stop the polling once the session has
been idle for :data:`IDLE_AFTER`, with a last render saying so.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseStopPolling

from dashboard.models import Session
from dashboard.web.htmx import HtmxHttpRequest

IDLE_AFTER = timedelta(minutes=10)
"""No call for this long and the session is no longer live: an agent waits minutes for its user."""
LATEST_CALLS = 5


def session_live_context(session: Session) -> dict[str, Any]:
    """Whether ``session`` is live and its latest calls, for the page and the polled panel alike."""
    return {
        # An undated session's activity is only its storing, not a call arriving.
        "is_live": session.dated and timezone.now() - session.last_activity < IDLE_AFTER,
        "latest_calls": list(session.requests.order_by("-ordinal")[:LATEST_CALLS]),
    }


@require_GET
def session_live_hx(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=session_id)
    live = session_live_context(session)
    status = 200 if live["is_live"] else HttpResponseStopPolling.status_code
    context = {"session": session, "live": live, "polled": True}
    return render(request, "dashboard/_session_live.html", context, status=status)
