"""Timestamps as the sources write them, read into timezone-aware UTC datetimes, and a session's
times kept only where they are plausible."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from datetime import UTC, datetime

from projections.formats.reading.limits import check_time
from projections.normalized import JSON, EventRecord, LineNotice, RequestRecord, SessionImport, SessionItem
from projections.wall_clock import implausibility

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


@dataclasses.dataclass(slots=True)
class _Implausible:
    """The lines whose time was implausible for one reason: the first of them and how many."""

    moment: datetime
    line: int | None
    count: int = 1
    last_line: int | None = None
    """The line counted last: an event and the request read from it share their line."""


class _PlausibleTimes:
    """The implausible times met in one session, kept as unknown and noticed once per reason."""

    def __init__(self, imported: SessionImport, now: datetime) -> None:
        self.imported = imported
        self.now = now
        self.found: dict[str, _Implausible] = {}

    def check(self, moment: datetime | None, line: int | None, *, of_line: bool = True) -> datetime | None:
        """``moment``, or ``None`` (noted) when it is implausible; ``of_line`` false for the
        session's own start or end, which a reader takes from its lines and so counts no line."""
        if moment is None:
            return None
        reason = implausibility(moment, now=self.now)
        if not reason:
            return moment
        if reason not in self.found:
            self.found[reason] = _Implausible(moment, line, count=int(of_line), last_line=line)
        elif of_line and (line is None or line != self.found[reason].last_line):
            found = self.found[reason]
            found.count += 1
            found.last_line = line
            if found.line is None:
                found.line, found.moment = line, moment
        return None

    def item(self, item: SessionItem) -> SessionItem:
        if isinstance(item, EventRecord):
            time = self.check(item.time, item.line)
            return item if time is item.time else dataclasses.replace(item, time=time)
        if isinstance(item, RequestRecord):
            started = self.check(item.started_at, item.line)
            # One line however many of its times are implausible.
            first_token = self.check(item.first_token_at, item.line, of_line=started is item.started_at)
            if started is item.started_at and first_token is item.first_token_at:
                return item
            return dataclasses.replace(item, started_at=started, first_token_at=first_token)
        return item

    def dates(self) -> None:
        """The session's own start and end, checked like its lines'."""
        self.imported.started_at = self.check(self.imported.started_at, None, of_line=False)
        self.imported.ended_at = self.check(self.imported.ended_at, None, of_line=False)

    def notices(self) -> Iterator[LineNotice]:
        for reason, found in self.found.items():
            more = f" ({found.count:,} lines)" if found.count > 1 else ""
            yield LineNotice(
                self.imported.path,
                found.line,
                "time",
                f"time {found.moment.isoformat()} is {reason}, not an agent's wall clock: "
                f"kept as unknown{more}",
            )


def plausible_times(imported: SessionImport, *, now: datetime) -> SessionImport:
    """``imported`` with every time before 2000 or more than a day after ``now`` kept as unknown.

    Such a time is a test clock's (the harness's snapshots count from the epoch) or a broken one's
    (a line dated 9999): stored, it would date the session and stretch every chart of the fleet to
    it. The line keeps everything else; one notice per kind names the first such line and counts
    the others. The session's start and end are checked now and its end again once its items are
    read, when a reader has settled it.
    """
    times = _PlausibleTimes(imported, now)
    times.dates()
    items = imported.items

    def checked() -> Iterator[SessionItem]:
        for item in items:
            yield times.item(item)
        imported.ended_at = times.check(imported.ended_at, None, of_line=False)
        yield from times.notices()

    imported.items = checked()
    return imported
