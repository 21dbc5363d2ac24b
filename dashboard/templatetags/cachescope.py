"""Small display filters: token counts, percentages, durations and query-string edits."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import template
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timezone import localtime

from dashboard.access.roles import has_role
from dashboard.web.glossary import term_named
from dashboard.web.money import usd as usd_text
from dashboard.web.percent import percent_text
from projections.wall_clock import is_wall_clock

register = template.Library()


@register.filter
def tokens(value: int | None) -> str:
    """1234567 → '1.23M'; None → '—' (not reported is not zero)."""
    if value is None:
        return "—"
    n = int(value)
    for limit, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return str(n)


UNREPORTED_TITLE = "not reported: the provider gave no such figure for any request behind it"


@register.filter
def tokens_title(value: int | None) -> str:
    """The exact count for a figure's title, or why it shows "—" (an unknown, never a 0)."""
    return UNREPORTED_TITLE if value is None else str(value)


@register.filter
def usd(value: Any) -> str:
    """A cost: whole cents from a dollar up, three significant figures below, 0 as $0, none as —."""
    return usd_text(value)


@register.simple_tag
def term(name: str, shown: str = "") -> SafeString:
    """``name`` linked to its glossary entry with its sense as the tooltip; ``shown`` replaces the words."""
    entry = term_named(name)
    url = reverse("dashboard:glossary") + "#" + entry.slug
    return format_html('<a class="term" href="{}" title="{}">{}</a>', url, entry.short, shown or name)


@register.filter
def wall_clock(moment: datetime | None) -> datetime | None:
    """``moment``, or ``None`` for a test clock's instant (see ``WALL_CLOCK_FROM``): an event the
    harness's snapshots timed at 0 ms shows no time rather than 1 January 1970."""
    return moment if is_wall_clock(moment) else None


SECOND = "%Y-%m-%d %H:%M:%S"
"""A moment to the second; ``strftime`` writes it in a fifth of the time of Django's ``date`` filter,
which a timeline page calls once or twice for each of its events."""


@register.filter
def session_moment(moment: datetime | None, session: Any) -> str:
    """A moment of ``session`` as its page writes it: the time of day while the whole session falls
    on one day, with the date too once it runs over several (else two calls days apart read alike)."""
    if not is_wall_clock(moment):
        return ""
    one_day = (
        session.started_at is not None
        and localtime(session.started_at).date() == localtime(session.last_activity).date()
    )
    return localtime(moment).strftime("%H:%M:%S" if one_day else SECOND)


@register.filter
def instant(moment: datetime) -> str:
    """``moment`` to the second in the dashboard's time zone, as ``date:"Y-m-d H:i:s"`` writes it."""
    return localtime(moment).strftime(SECOND)


@register.filter
def percent(value: float | None) -> str:
    """0.00225 → '0.2%', by the rule the charts' notes follow too."""
    return percent_text(value)


POSITION_PARAMS = frozenset({"page", "after", "before"})


@register.simple_tag(takes_context=True)
def query(context: dict[str, Any], **changes: Any) -> str:
    """The current query string with ``changes`` applied; a change to anything but the position
    (page number or keyset cursor) starts again from the first page."""
    params: QueryDict = context["request"].GET.copy()
    if not POSITION_PARAMS & changes.keys():
        for name in POSITION_PARAMS:
            params.pop(name, None)
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def role(user: Any, name: str) -> bool:
    return has_role(user, name)


@register.simple_tag(takes_context=True)
def sort_state(context: dict[str, Any], key: str) -> str:
    """'ascending', 'descending' or '' for the column ``key`` under the page's current sort."""
    sort = context.get("sort", "")
    if sort == key:
        return "ascending"
    if sort == f"-{key}":
        return "descending"
    return ""


@register.simple_tag(takes_context=True)
def sort_query(context: dict[str, Any], key: str) -> str:
    """The query string that sorts by ``key``: descending first, then toggling on each click."""
    current = context.get("sort", "")
    return query(context, sort=key if current == f"-{key}" else f"-{key}")


UNIT_PREVIEW_CHARS = 4000
INLINE_DATA_CHARS = 200


@register.filter
def unit_preview(canonical: str | None) -> str:
    """A readable rendering of a unit's canonical JSON: its text when it has one, never a base64 wall."""
    if not canonical:
        return ""
    try:
        unit = json.loads(canonical)
    except ValueError:
        return canonical[:UNIT_PREVIEW_CHARS]
    if isinstance(unit, dict) and isinstance(unit.get("text"), str):
        text = unit["text"]
    else:
        text = json.dumps(_shrink_data(unit), ensure_ascii=False, indent=1)
    return (
        text
        if len(text) <= UNIT_PREVIEW_CHARS
        else text[:UNIT_PREVIEW_CHARS] + f"\n… ({len(text):,} characters)"
    )


def _shrink_data(value: Any) -> Any:
    """Replace long inline data (base64 images, documents) with a size placeholder."""
    if isinstance(value, dict):
        return {
            key: (
                f"[{len(item):,} characters of data]"
                if key in {"data", "image_url", "file_data"}
                and isinstance(item, str)
                and len(item) > INLINE_DATA_CHARS
                else _shrink_data(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_shrink_data(item) for item in value]
    return value
