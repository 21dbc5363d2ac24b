"""Timestamps as the sources write them, read into timezone-aware UTC datetimes."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from projections.formats.reading.limits import check_time
from projections.normalized import JSON

# Epoch values above this are milliseconds; below, seconds (year 33658 in seconds, 1970+ in ms).
_MILLISECONDS_FROM = 10**12


def epoch_ms(value: int | float) -> datetime:
    """A UTC datetime from epoch milliseconds."""
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def parse_iso(text: str) -> datetime:
    """A UTC datetime from an ISO-8601 string; a string without an offset is taken as UTC.

    Raises ``ValueError`` for a text that is not a time, or one outside the stored range once
    converted to UTC (``0001-01-01T00:00:00+05:00`` lies before the first representable moment).
    """
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        return check_time(moment.replace(tzinfo=UTC))
    try:
        return check_time(moment.astimezone(UTC))
    except OverflowError:
        raise ValueError(f"time {text.strip()!r} is outside the range of a datetime in UTC") from None


def parse_time(value: JSON, *, numbers: str = "ms") -> datetime:
    """A UTC datetime from an ISO string or an epoch number.

    ``numbers`` says how a number counts: ``"ms"`` (dsh), ``"s"`` (claude-trace's float seconds) or
    ``"auto"`` (milliseconds when the value is too large to be seconds). Raises ``ValueError``.
    """
    if isinstance(value, str):
        return parse_iso(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected an ISO-8601 string or an epoch number, got {value!r}")
    as_ms = numbers == "ms" or (numbers == "auto" and abs(value) >= _MILLISECONDS_FROM)
    try:
        return check_time(epoch_ms(value) if as_ms else datetime.fromtimestamp(value, tz=UTC))
    except (OverflowError, OSError) as error:
        raise ValueError(f"time {value!r} is out of range: {error}") from None


def optional_time(value: JSON, *, numbers: str = "ms") -> datetime | None:
    """:func:`parse_time`, or ``None`` for a missing value or one that does not parse."""
    if value is None:
        return None
    try:
        return parse_time(value, numbers=numbers)
    except ValueError:
        return None
