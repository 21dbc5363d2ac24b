"""Query-string values read so that no value a user can type reaches the database as an error.

Django decodes a query string with replacement characters, but ``%00`` still arrives as a NUL, which
PostgreSQL refuses in any text parameter, and an id or count can be larger than any column holds.
Each reader returns a usable value or nothing, and names what it ignored in ``errors`` (parameter →
message), which the page shows.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.http import HttpRequest, QueryDict
from django.utils import timezone

from projections.formats.reading.limits import EARLIEST_TIME, LATEST_TIME

MAX_TEXT = 200
"""The longest text filter kept; no source, model or event type name is longer."""
MAX_DB_INTEGER = 2**63 - 1
"""The largest value a 64-bit column (an id, a token count) holds."""


def unstorable(text: str) -> bool:
    """Whether ``text`` holds a character no database text parameter accepts (NUL, a lone surrogate)."""
    return "\x00" in text or any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def text_param(params: QueryDict, name: str, errors: dict[str, str], *, max_length: int = MAX_TEXT) -> str:
    """The stripped text of ``name``; ``""`` (and a message) when it is unstorable or too long."""
    value = params.get(name, "").strip()
    if unstorable(value):
        errors[name] = "contains a NUL or an unpaired surrogate character"
        return ""
    if len(value) > max_length:
        errors[name] = f"is longer than {max_length} characters"
        return ""
    return value


def id_param(params: QueryDict, name: str, errors: dict[str, str]) -> int | None:
    """The row id ``name`` gives (ASCII digits within a 64-bit column), or ``None``."""
    raw = params.get(name, "").strip()
    if not raw:
        return None
    # str.isdigit accepts "²" and other digits int() refuses; only ASCII digits are an id.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or int(raw) > MAX_DB_INTEGER:
        errors[name] = f"{raw[:40]!r} is not an id"
        return None
    return int(raw)


def report_ignored(request: HttpRequest, errors: dict[str, str]) -> None:
    """Tell the user which parameters were ignored, on the next full page (an htmx swap has no slot)."""
    if request.headers.get("HX-Request"):
        return
    for name, message in errors.items():
        messages.warning(request, f"{name}: {message} (ignored)")


def choice_param(params: QueryDict, name: str, choices: set[str], errors: dict[str, str]) -> str:
    """``name`` when it is one of ``choices``; ``""`` (and a message) otherwise."""
    value = params.get(name, "").strip()
    if value and value not in choices:
        errors[name] = f"{value[:40]!r} is not one of {', '.join(sorted(choices))}"
        return ""
    return value


TIME_EXPECTED = (
    f"a time like 2026-01-31 or 2026-01-31T09:00Z, from {EARLIEST_TIME.date()} to {LATEST_TIME.date()}"
)
"""What a time filter (``since``, ``until``) accepts, for the message naming a bad one."""


def iso_moment(raw: str) -> datetime:
    """An ISO date or time from a URL; one without a zone is in the dashboard's zone (``TIME_ZONE``).

    Raises ``ValueError`` for text that is no time, or a time outside what the database stores.
    """
    moment = datetime.fromisoformat(raw)
    try:
        if moment.tzinfo is None:
            moment = timezone.make_aware(moment)
        within = EARLIEST_TIME <= moment <= LATEST_TIME
    except OverflowError:  # a time at the calendar's edge, shifted out of it by its zone
        within = False
    if not within:
        raise ValueError(raw)
    return moment
