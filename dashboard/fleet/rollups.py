"""Keep the hourly and daily usage rollups equal to the sums over the requests they cover.

A rollup row is never adjusted by a difference: the buckets a session touches are recomputed from
the requests in them, so running a refresh twice, or for a session that is gone, leaves the same
rows. Ingest refreshes a session's buckets in the transaction that stores its requests, and a
session's deletion in the one that deletes it, so the sums commit with the rows they sum. Hours are
summed from requests, days from their hours.

On PostgreSQL a refresh takes a per-source advisory lock held to the end of its transaction, so two
sessions of one source ingested at once cannot each write a bucket without the other's requests:
the second waits for the first to commit, then reads both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from itertools import zip_longest

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncHour

from dashboard.models import Request, UsageRollup

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
HOURS_PER_QUERY = 200
"""Bounds the OR of hour ranges in one aggregate query."""
ROLLUP_LOCK = 0x6B0113
"""The advisory lock class of rollup refreshes; the second key is the source id."""
TOKEN_FIELDS = (
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
)
_READ_REPORTED = Q(cache_read_tokens__isnull=False)
_WRITE_REPORTED = Q(cache_write_5m_tokens__isnull=False) | Q(cache_write_1h_tokens__isnull=False)
REPORTED_COUNTS = ("cache_reported", "read_reported", "write_reported")
REQUEST_SUMS = {
    "requests": Count("id"),
    "cache_reported": Count("id", filter=_READ_REPORTED | _WRITE_REPORTED),
    "read_reported": Count("id", filter=_READ_REPORTED),
    "write_reported": Count("id", filter=_WRITE_REPORTED),
    **{name: Coalesce(Sum(name), 0) for name in TOKEN_FIELDS},
}
"""One bucket's figures over its requests; an unreported figure adds 0, and the ``*_reported``
counts keep whether any request reported a cache figure at all, a read, a write."""


def hour_of(moment: datetime) -> datetime:
    """The UTC hour ``moment`` falls in."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    """The UTC day ``moment`` falls in, as its midnight."""
    return hour_of(moment).replace(hour=0)


def session_buckets(*, session_ids: Iterable[int]) -> dict[int, set[datetime]]:
    """The hours, by source id, that the timed requests of these sessions fall in (one query)."""
    rows = (
        Request.objects.filter(session_id__in=list(session_ids), started_at__isnull=False)
        .annotate(hour=TruncHour("started_at", tzinfo=UTC))
        .values_list("session__source_id", "hour")
        .distinct()
        .order_by()
    )
    buckets: dict[int, set[datetime]] = defaultdict(set)
    for source_id, hour in rows:
        buckets[source_id].add(hour_of(hour))
    return buckets


def rollups_refresh_sessions(*, session_ids: Iterable[int]) -> None:
    """Recompute every hour and day that a request of these sessions falls in."""
    rollups_refresh(buckets=session_buckets(session_ids=session_ids))


class RollupBuckets:
    """The buckets of the sessions a transaction stores, refreshed once before it commits.

    A transaction that stores many sessions (a step of a folder's ingest, an API batch) refreshes
    each bucket once for all of them rather than once a session. A session rolled back to its
    savepoint may leave its buckets here: refreshing a bucket sums what is stored, so that costs a
    recount, never a wrong sum.
    """

    def __init__(self) -> None:
        self.hours: dict[int, set[datetime]] = defaultdict(set)
        self.session_ids: list[int] = []

    def add_hours(self, source_id: int, hours: Iterable[datetime]) -> None:
        """The hours a new session's requests fall in."""
        self.hours[source_id].update(hours)

    def add_session(self, session_id: int) -> None:
        """A session stored before, whose hours are read from its rows."""
        self.session_ids.append(session_id)

    def refresh(self) -> None:
        """Recompute every bucket gathered, in the caller's transaction; then start afresh."""
        buckets = self.hours
        if self.session_ids:
            for source_id, hours in session_buckets(session_ids=self.session_ids).items():
                buckets[source_id].update(hours)
        rollups_refresh(buckets=buckets)
        self.hours = defaultdict(set)
        self.session_ids = []


def rollups_refresh(*, buckets: dict[int, set[datetime]]) -> None:
    """Recompute the given hours of each source from its requests, and the days they fall in."""
    # In source order, as every refresh takes the sources' locks: two cannot wait on each other.
    for source_id, hours in sorted(buckets.items()):
        if hours:
            # Inside the caller's transaction (an ingest's, a deletion's) no savepoint of its own:
            # an error here rolls the caller's work back with it, as the sums must.
            with transaction.atomic(savepoint=False):
                _lock_source(source_id)
                _refresh(source_id, sorted(hours))


def rollups_rebuild() -> int:
    """Rebuild every rollup from every request; return the number of hour rows written."""
    with transaction.atomic():
        UsageRollup.objects.all().delete()
        hours = _hour_rows(Request.objects.filter(started_at__isnull=False))
        UsageRollup.objects.bulk_create(hours, batch_size=2_000)
        UsageRollup.objects.bulk_create(_day_rows(hours), batch_size=2_000)
    return len(hours)


def _lock_source(source_id: int) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [ROLLUP_LOCK, source_id])


def _ranges(starts: list[datetime], width: timedelta, field: str) -> Q:
    """Rows whose ``field`` falls in one of the buckets, neighbouring buckets joined into one range."""
    spans: list[list[datetime]] = []
    for start in starts:
        if spans and spans[-1][1] == start:
            spans[-1][1] = start + width
        else:
            spans.append([start, start + width])
    condition = Q()
    for low, high in spans:
        condition |= Q(**{f"{field}__gte": low, f"{field}__lt": high})
    return condition


def _hour_rows(requests: QuerySet[Request]) -> list[UsageRollup]:
    rows = (
        requests.annotate(hour=TruncHour("started_at", tzinfo=UTC))
        .values("hour", "session__source_id", "model", "client_version")
        .annotate(**REQUEST_SUMS)
        .order_by()
    )
    return [
        UsageRollup(
            granularity=UsageRollup.Granularity.HOUR,
            bucket_start=hour_of(row["hour"]),
            source_id=row["session__source_id"],
            model=row["model"],
            client_version=row["client_version"],
            requests=row["requests"],
            **{name: row[name] for name in (*REPORTED_COUNTS, *TOKEN_FIELDS)},
        )
        for row in rows
    ]


def _day_rows(hours: Iterable[UsageRollup]) -> list[UsageRollup]:
    days: dict[tuple[datetime, int, str, str], UsageRollup] = {}
    for hour in hours:
        key = (day_of(hour.bucket_start), hour.source_id, hour.model, hour.client_version)
        day = days.get(key)
        if day is None:
            day = days[key] = UsageRollup(
                granularity=UsageRollup.Granularity.DAY,
                bucket_start=key[0],
                source_id=key[1],
                model=key[2],
                client_version=key[3],
            )
        day.requests += hour.requests
        for name in (*REPORTED_COUNTS, *TOKEN_FIELDS):
            setattr(day, name, getattr(day, name) + getattr(hour, name))
    return list(days.values())


def _refresh(source_id: int, hours: list[datetime]) -> None:
    """Replace the source's rows of ``hours`` and of the days they fall in: the hours summed from
    the requests, the days from those new hours and the day's other hours as stored. Four queries
    for the few hours an ingested session touches (the days are not read back after the hours are
    written)."""
    days = sorted({day_of(hour) for hour in hours})
    hour_rows: list[UsageRollup] = []
    for chunk in _chunks(hours):
        requests = Request.objects.filter(_ranges(chunk, HOUR, "started_at"), session__source_id=source_id)
        hour_rows.extend(_hour_rows(requests))
    refreshed = set(hours)
    other_hours: list[UsageRollup] = []
    for chunk in _chunks(days):
        stored = UsageRollup.objects.filter(
            _ranges(chunk, DAY, "bucket_start"), granularity=UsageRollup.Granularity.HOUR, source_id=source_id
        )
        other_hours.extend(row for row in stored if row.bucket_start not in refreshed)
    day_rows = _day_rows([*other_hours, *hour_rows])
    for hour_chunk, day_chunk in zip_longest(_chunks(hours), _chunks(days), fillvalue=[]):
        UsageRollup.objects.filter(
            Q(granularity=UsageRollup.Granularity.HOUR, bucket_start__in=hour_chunk)
            | Q(granularity=UsageRollup.Granularity.DAY, bucket_start__in=day_chunk),
            source_id=source_id,
        ).delete()
    UsageRollup.objects.bulk_create([*hour_rows, *day_rows])


def _chunks(buckets: list[datetime]) -> list[list[datetime]]:
    return [buckets[index : index + HOURS_PER_QUERY] for index in range(0, len(buckets), HOURS_PER_QUERY)]
