"""A page of the session page's event timeline: the stored events from one seq on, of one type or
all, read as conversation items by :mod:`dashboard.sessions.timeline`, and where the next page starts."""

from __future__ import annotations

from typing import Any

from dashboard.models import Event, Session
from dashboard.models.sessions import EVENTS_PER_PAGE
from dashboard.sessions.timeline import raw_json_shown, timeline_items

ITEMS_PER_PAGE = 50
"""Conversation items a page shows at most, however few events they fold (a page also stops after
:data:`EVENTS_PER_PAGE` events, however few items those make)."""


def events_page(*, session: Session, start: int, event_type: str) -> dict[str, Any]:
    """Events from seq ``start``, of type ``event_type`` when not empty, as at most
    :data:`ITEMS_PER_PAGE` timeline items; and the seq the next page starts at, if any."""
    events = Event.objects.filter(session=session, seq__gte=start).order_by("seq")
    if event_type:
        events = events.filter(type=event_type)
    rows = list(events[: EVENTS_PER_PAGE + 1])
    following = rows[EVENTS_PER_PAGE].seq if len(rows) > EVENTS_PER_PAGE else None
    items = timeline_items(rows[:EVENTS_PER_PAGE])
    if len(items) > ITEMS_PER_PAGE:
        following, items = items[ITEMS_PER_PAGE].seq, items[:ITEMS_PER_PAGE]
    if following is not None and len(items) > 1 and items[-1].chunks and items[-1].own_events == []:
        # A stream the page cut before its message: the next page shows it folded into the reply.
        following = items.pop().seq
    for item in items:
        for event in item.events:
            event.raw, event.raw_cut = raw_json_shown(event)  # type: ignore[attr-defined]
    types = Event.objects.filter(session=session).order_by("type").values_list("type", flat=True).distinct()
    return {
        "timeline": items,
        "events_from": start,
        "events_next": following,
        "events_earlier": max(0, start - EVENTS_PER_PAGE) if start > 0 else None,
        "event_type": event_type,
        "event_types": list(types),
    }
