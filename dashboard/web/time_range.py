"""The time range a fleet chart covers (``?range=24h|7d|30d|90d|all``) and the buckets it is cut into.

A range counts back from now, as an operator reads "the last 30 days" (Langfuse and Helicone do
the same): a fleet whose newest log is old shows an empty range and says how much lies before it
(:func:`widening_range`), rather than quietly sliding the range back to its newest request. "All"
spans from the oldest data to the newest. Buckets are hours up to two days, days up to 90 days and
weeks (starting Monday, UTC) beyond; "all" coarsens to calendar months and then years until it
holds at most :data:`MAX_BUCKETS`, so a chart carries a few hundred bars or points whatever the
history: a chart of every week since 1970 zero-filled thousands of buckets per source.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TypeGuard

RANGES: dict[str, timedelta | None] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
    "all": None,
}
DEFAULT_RANGE = "30d"
RANGE_LABELS = {"24h": "24 hours", "7d": "7 days", "30d": "30 days", "90d": "90 days", "all": "all"}

HOURLY_UP_TO = timedelta(days=2)
DAILY_UP_TO = timedelta(days=90)
MAX_BUCKETS = 200
"""The most buckets of "all": weeks up to about four years, months up to about sixteen, years beyond."""


class Step(StrEnum):
    """How wide one bucket of a chart is."""

    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"

    @property
    def width(self) -> timedelta:
        """The bucket's length; for a month or a year, the longest one (calendar buckets vary)."""
        return _WIDTHS[self.value]

    @property
    def coarser(self) -> Step | None:
        """The next wider step, ``None`` after a year."""
        order = list(Step)
        index = order.index(self)
        return order[index + 1] if index + 1 < len(order) else None

    @property
    def sums_days(self) -> bool:
        """Whether its buckets are summed from the daily rollups rather than read as they are."""
        return self not in (Step.HOUR, Step.DAY)

    def floor(self, moment: datetime) -> datetime:
        """The start of the bucket ``moment`` falls in (UTC)."""
        hour = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        if self is Step.HOUR:
            return hour
        day = hour.replace(hour=0)
        if self is Step.DAY:
            return day
        if self is Step.WEEK:
            return day - timedelta(days=day.weekday())
        if self is Step.MONTH:
            return day.replace(day=1)
        return day.replace(month=1, day=1)

    def next(self, start: datetime) -> datetime:
        """The start of the bucket after the one starting at ``start``."""
        if self is Step.MONTH:
            return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        if self is Step.YEAR:
            return start.replace(year=start.year + 1)
        return start + self.width

    def count(self, span: timedelta) -> int:
        """About how many buckets of this step ``span`` holds (at least one)."""
        return max(1, -(-span // _MEAN_WIDTHS.get(self.value, self.width)))


_WIDTHS = {
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(days=7),
    "month": timedelta(days=31),
    "year": timedelta(days=366),
}
_MEAN_WIDTHS = {"month": timedelta(days=30.44), "year": timedelta(days=365.25)}


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """The half-open span ``[start, end)`` a page shows, cut into buckets of one ``step``."""

    name: str
    start: datetime
    end: datetime
    step: Step

    @property
    def buckets(self) -> list[datetime]:
        """Every bucket start from ``start`` to ``end``, empty ones included."""
        starts, moment = [], self.start
        while moment < self.end:
            starts.append(moment)
            moment = self.step.next(moment)
        return starts

    def bucket_end(self, start: datetime) -> datetime:
        return self.step.next(start)


def range_name(raw: str | None) -> str:
    """The range a query string asked for; anything unknown is the default."""
    return raw if raw in RANGES else DEFAULT_RANGE


def step_for(span: timedelta) -> Step:
    """Hours up to two days, days up to 90, weeks beyond."""
    if span <= HOURLY_UP_TO:
        return Step.HOUR
    if span <= DAILY_UP_TO:
        return Step.DAY
    return Step.WEEK


def all_step_for(span: timedelta) -> Step:
    """The step of "all" over ``span``: as fine as a fixed range of its length, then coarser until
    the span holds at most :data:`MAX_BUCKETS`."""
    step = step_for(span)
    while step.count(span) > MAX_BUCKETS and step.coarser is not None:
        step = step.coarser
    return step


def wall_clock() -> datetime:
    """Now, in UTC: what a range of some length counts back from. The pages read it through this
    module, so a test can set it."""
    return datetime.now(UTC)


def time_window(
    name: str, *, oldest: datetime | None, newest: datetime | None, now: datetime
) -> TimeWindow | None:
    """The window of range ``name`` ending with the bucket of ``now``; ``None`` without data.

    ``all`` spans from the oldest data to the newest; its step follows its length
    (:func:`all_step_for`).
    """
    if oldest is None or newest is None:
        return None
    length = RANGES[range_name(name)]
    span = length if length is not None else max(newest - oldest, timedelta(hours=1))
    step = step_for(span) if length is not None else all_step_for(span)
    if length is None:
        end = step.next(step.floor(newest))
        return TimeWindow(name="all", start=step.floor(oldest), end=end, step=step)
    end = step.next(step.floor(now))
    return TimeWindow(name=range_name(name), start=step.floor(end - length), end=end, step=step)


def widening_range(name: str, *, oldest_activity: datetime | None, now: datetime) -> str:
    """The shortest range longer than ``name`` that reaches back to ``oldest_activity`` (``all`` when
    none does, or when a session has no time at all: ``oldest_activity`` ``None``)."""
    names = list(RANGES)
    for wider in names[names.index(range_name(name)) + 1 :]:
        length = RANGES[wider]
        if length is None or oldest_activity is None:
            return "all"
        window = time_window(wider, oldest=oldest_activity, newest=now, now=now)
        if window is not None and window.start <= oldest_activity:
            return wider
    return "all"


def range_limited(window: TimeWindow | None) -> TypeGuard[TimeWindow]:
    """Whether ``window`` leaves anything out: a range of some length, not "all"."""
    return window is not None and RANGES[window.name] is not None
