"""The bounds every way data comes in shares: the API, an upload and the ingest command.

A value outside them is refused where it is read, as a line error naming the field and the bound,
so nothing downstream (the database, a fold, a page) meets a number or a time it cannot hold.
Nesting depth and the characters no database stores live in :mod:`projections.formats.reading.storable`;
the longest line in :mod:`projections.formats.reading.lines`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

MAX_SEQ = 2**31 - 1
"""The largest event seq stored: the event table's seq column is a 32-bit integer."""

MAX_EVENT_TYPE = 80
"""The longest event type stored: the event table's type column; real types are under 40 characters."""

MAX_SOURCE_SEQS = 100_000
"""The most seqs one event's ``sourceEventSeqs`` may expand to; a compaction shadows a few thousand."""

EARLIEST_TIME = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LATEST_TIME = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)
"""Times are kept a day inside what a datetime holds, so a day's bucket around one never overflows."""


class OutOfBounds(ValueError):
    """A value outside one of the bounds above; the message names the bound."""


def check_seq(value: int) -> int:
    """``value`` when it is a seq the store can hold; raises :class:`OutOfBounds` otherwise."""
    if not 0 <= value <= MAX_SEQ:
        raise OutOfBounds(f"seq {value} is outside 0..{MAX_SEQ}, the largest seq stored")
    return value


def check_time(moment: datetime) -> datetime:
    """``moment`` when it lies within the stored time range; raises :class:`OutOfBounds` otherwise."""
    if not EARLIEST_TIME <= moment <= LATEST_TIME:
        raise OutOfBounds(
            f"time {moment.isoformat()} is outside {EARLIEST_TIME.date()}..{LATEST_TIME.date()} (UTC)"
        )
    return moment
