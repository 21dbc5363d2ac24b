"""The navigation's alerts badge: how many alerts are open, read once per page."""

from __future__ import annotations

from django import template

from dashboard.models import Alert

register = template.Library()


@register.simple_tag
def open_alert_count() -> int:
    """The number of open alerts (one indexed count)."""
    return Alert.objects.open().count()
