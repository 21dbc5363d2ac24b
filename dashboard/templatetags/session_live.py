"""``{% session_live session as live %}``: the live panel's context where the session page renders it."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.models import Session
from dashboard.sessions.live import session_live_context

register = template.Library()


@register.simple_tag
def session_live(session: Session) -> dict[str, Any]:
    return session_live_context(session)
