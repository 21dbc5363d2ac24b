"""The fleet's usage over the overview's time range, read from the hourly and daily rollups.

One query reads the rollup rows of the window (a few thousand at most); everything the overview
shows per bucket, per source and per model is summed from them here, so a 90-day range costs about
what a day costs.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.urls import reverse

from dashboard.costs.pricing import Tokens, price_match, prices_load, usage_cost
from dashboard.models import Session, Source, UsageRollup
from dashboard.web import time_range
from dashboard.web.time_range import (
    RANGE_LABELS,
    Step,
    TimeWindow,
    range_limited,
    time_window,
    widening_range,
)
from projections.client_version import version_sort_key
from projections.hit_rate import hit_rate
from projections.wall_clock import plausible_span


@dataclass(frozen=True, slots=True)
class ClientVersionRow:
    """One client release's requests, sessions, prompt tokens and hit rate."""

    client_version: str
    sessions: int
    requests: int
    prompt_tokens: int
    hit_rate: float | None
    """By the one rule of :func:`projections.hit_rate.hit_rate`; ``None`` when nothing was reported."""


@dataclass(slots=True)
class Usage:
    """Token sums of some requests; ``cache_reported`` counts those that reported a cache figure,
    ``read_reported`` and ``write_reported`` those that reported a read, a write."""

    requests: int = 0
    cache_reported: int = 0
    uncached: int = 0
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    output: int = 0
    read_reported: int = 0
    write_reported: int = 0

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.cache_reported += other.cache_reported
        self.uncached += other.uncached
        self.read += other.read
        self.write_5m += other.write_5m
        self.write_1h += other.write_1h
        self.output += other.output
        self.read_reported += other.read_reported
        self.write_reported += other.write_reported

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h

    @property
    def reported_read(self) -> int | None:
        """The cache reads, or ``None`` when no request reported one: unknown, not 0."""
        return self.read if self.read_reported else None

    @property
    def reported_write(self) -> int | None:
        """The cache writes, or ``None`` when no request reported one: unknown, not 0."""
        return self.write if self.write_reported else None

    @property
    def prompt(self) -> int:
        return self.uncached + self.read + self.write

    @property
    def hit_rate(self) -> float | None:
        """By the one rule of :func:`projections.hit_rate.hit_rate`; ``None`` when nothing was reported."""
        if not self.cache_reported:
            return None
        return hit_rate(read=self.read, uncached=self.uncached, writes=self.write)

    @property
    def tokens(self) -> Tokens:
        return Tokens(self.uncached, self.read, self.write_5m, self.write_1h, self.output)


@dataclass
class FleetUsage:
    """The window's usage per bucket (the whole fleet and per source) and per source and model."""

    window: TimeWindow
    total: Usage = field(default_factory=Usage)
    by_bucket: dict[datetime, Usage] = field(default_factory=dict)
    by_source_bucket: dict[str, dict[datetime, Usage]] = field(default_factory=lambda: defaultdict(dict))
    by_source_model: dict[tuple[int, str], Usage] = field(default_factory=dict)
    by_client_version: dict[str, Usage] = field(default_factory=dict)
    cost_by_source_bucket: dict[str, dict[datetime, Decimal]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    """The priced models' cost per source and bucket; a bucket no priced request fell in is absent."""

    def requests_url(self, bucket: datetime, source: str = "") -> str:
        """The requests list narrowed to one bucket (and one source): what a chart's point stands for."""
        params = span_params(bucket, self.window.bucket_end(bucket))
        if source:
            params["source"] = source
        return _requests_path() + "?" + urlencode(params)


@functools.cache
def _requests_path() -> str:
    """Reversed once: a chart of a 90-day range links a few hundred buckets."""
    return reverse("dashboard:requests")


def span_params(start: datetime, end: datetime) -> dict[str, str]:
    """The ``since`` and ``until`` filters of the sessions and requests lists for ``[start, end)``:
    a link from a figure of the overview lists what the figure counted, not all time's."""
    return {"since": iso(start), "until": iso(end)}


def iso(moment: datetime) -> str:
    """A UTC time as the list filters read it: ``2026-01-31T14:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fleet_window(range_name: str) -> TimeWindow | None:
    """The window of ``range_name`` counting back from now (``all``: over the data there is);
    ``None`` when no request has a time.

    Only plausible hours count (:func:`~projections.wall_clock.plausible_span`): a request stored
    with a time of 9999 or 0001 before ingest refused such times would otherwise stretch "all" to it.
    """
    now = time_range.wall_clock()
    earliest, latest = plausible_span(now=now)
    extent = UsageRollup.objects.filter(
        granularity=UsageRollup.Granularity.HOUR, bucket_start__gte=earliest, bucket_start__lte=latest
    ).aggregate(oldest=Min("bucket_start"), newest=Max("bucket_start"))
    return time_window(range_name, oldest=extent["oldest"], newest=extent["newest"], now=now)


ROLLUP_SUMS = {
    "requests_sum": Sum("requests"),
    "cache_reported_sum": Sum("cache_reported"),
    "uncached_sum": Sum("uncached_input_tokens"),
    "read_sum": Sum("cache_read_tokens"),
    "write_5m_sum": Sum("cache_write_5m_tokens"),
    "write_1h_sum": Sum("cache_write_1h_tokens"),
    "output_sum": Sum("output_tokens"),
    "read_reported_sum": Sum("read_reported"),
    "write_reported_sum": Sum("write_reported"),
}
"""In the order of :class:`Usage`'s fields."""


def _usage(row: dict[str, Any]) -> Usage:
    return Usage(*(row[name] or 0 for name in ROLLUP_SUMS))


def fleet_usage(window: TimeWindow) -> FleetUsage:
    """Sum the rollup rows of ``window`` by bucket and source (priced by model), by source and model,
    and by client release: four queries, so only a few thousand sums reach Python whatever the range."""
    granularity = UsageRollup.Granularity.HOUR if window.step is Step.HOUR else UsageRollup.Granularity.DAY
    rows = UsageRollup.objects.filter(
        granularity=granularity, bucket_start__gte=window.start, bucket_start__lt=window.end
    ).order_by()
    usage = FleetUsage(window=window)
    prices = prices_load()
    for row in rows.values("bucket_start", "source__name", "model").annotate(**ROLLUP_SUMS):
        figures = _usage(row)
        # Days are summed into weeks, months or years here: the bucket their first day opens.
        bucket = window.step.floor(row["bucket_start"]) if window.step.sums_days else row["bucket_start"]
        source = row["source__name"]
        usage.total.add(figures)
        usage.by_bucket.setdefault(bucket, Usage()).add(figures)
        usage.by_source_bucket[source].setdefault(bucket, Usage()).add(figures)
        price = price_match(model=row["model"], prices=prices)
        if price is not None:
            costs = usage.cost_by_source_bucket[source]
            costs[bucket] = costs.get(bucket, Decimal(0)) + usage_cost(tokens=figures.tokens, price=price)
    for row in rows.values("source_id", "model").annotate(**ROLLUP_SUMS):
        usage.by_source_model[(row["source_id"], row["model"])] = _usage(row)
    for row in rows.exclude(client_version="").values("client_version").annotate(**ROLLUP_SUMS):
        usage.by_client_version[row["client_version"]] = _usage(row)
    return usage


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One source's line of the overview's table over the window."""

    source: Source
    sessions: int
    usage: Usage
    cost: Decimal | None
    unpriced_models: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FleetCost:
    """The window's cost over the models with a price, and what it leaves out for want of one."""

    total: Decimal | None
    """``None`` when no request of the window has a price."""
    unpriced_requests: int = 0
    unpriced_models: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Whether requests of the window are left out of :attr:`total` (which then still counts)."""
        return self.total is not None and self.unpriced_requests > 0


@dataclass(frozen=True, slots=True)
class ActiveSessions:
    """The sessions active in a window, counted by source and by client release."""

    by_source: dict[int, int]
    by_client_version: dict[str, int]
    sessions: int
    events: int


ACTIVE_CACHE_SECONDS = 60


def active_sessions(window: TimeWindow | None) -> QuerySet[Session]:
    """The sessions with activity in the window: started before its end, last active after its start.

    "All" is every session, not those active within the requests' span: a session without a
    request, or without a time at all, is still one of the fleet's. A session without a time (see
    :attr:`Session.dated <dashboard.models.Session.dated>`) is in no range of some length.
    """
    sessions = Session.objects.all()
    if not range_limited(window):
        return sessions
    return sessions.active_between(window.start, window.end)


def active_sessions_count(window: TimeWindow) -> ActiveSessions:
    """:func:`active_sessions_counted`, from the cache while no session was added and none moved
    past the newest activity; a minute at most, for a session that grew without moving it (an old
    log ingested again, longer) or one deleted.

    The 90-day and all-time ranges of a fleet count nearly every session: at 100,000 sessions the
    aggregate reads the whole table, some 60 ms on every view of the overview.
    """
    newest = Session.objects.aggregate(session=Max("id"), activity=Max("last_activity"))
    activity = newest["activity"].timestamp() if newest["activity"] else 0
    key = (
        f"active-sessions:{window.start.timestamp()}:{window.end.timestamp()}:{newest['session']}:{activity}"
    )
    counted: ActiveSessions | None = cache.get(key)
    if counted is None:
        counted = active_sessions_counted(window)
        cache.set(key, counted, ACTIVE_CACHE_SECONDS)
    return counted


@dataclass(frozen=True, slots=True)
class Outside:
    """The stored sessions a range leaves out, and the shortest range that takes them in."""

    sessions: int
    wider: str
    """A name of :data:`~dashboard.web.time_range.RANGES`; empty when no range shows them."""

    @property
    def wider_label(self) -> str:
        if not self.wider:
            return ""
        return "all time" if self.wider == "all" else f"the last {RANGE_LABELS[self.wider]}"


def sessions_outside(window: TimeWindow | None, active: ActiveSessions | None) -> Outside | None:
    """How many stored sessions ``window`` leaves out (those last active before it, or without any
    time), and the range that would show them; ``None`` when it leaves none out.

    An empty range over a fleet that has data is not "nothing wrong": the page says what lies
    outside and links to it. Without a window (no request has a time) every session is outside and
    ``wider`` is empty: only the sessions list shows them. One aggregate query, cached as the
    active sessions' count is.
    """
    if window is not None and not range_limited(window):
        return None
    stored = _stored_sessions()
    left_out = stored["total"] - (active.sessions if window is not None and active is not None else 0)
    if left_out <= 0:
        return None
    if window is None:
        return Outside(sessions=left_out, wider="")
    oldest = None if stored["undated"] else stored["oldest"]
    return Outside(
        sessions=left_out,
        wider=widening_range(window.name, oldest_activity=oldest, now=time_range.wall_clock()),
    )


def _stored_sessions() -> dict[str, Any]:
    newest = Session.objects.aggregate(session=Max("id"), activity=Max("last_activity"))
    activity = newest["activity"].timestamp() if newest["activity"] else 0
    key = f"stored-sessions:{newest['session']}:{activity}"
    stored: dict[str, Any] | None = cache.get(key)
    if stored is None:
        stored = Session.objects.aggregate(
            total=Count("id"),
            undated=Count("id", filter=Q(started_at__isnull=True)),
            oldest=Min("last_activity", filter=Q(started_at__isnull=False)),
        )
        cache.set(key, stored, ACTIVE_CACHE_SECONDS)
    return stored


def active_sessions_counted(window: TimeWindow) -> ActiveSessions:
    """Count the sessions active in ``window`` (started before its end, last active after its start)
    per source and per client release, with their events, in one aggregate query."""
    active = active_sessions(window)
    by_source: dict[int, int] = defaultdict(int)
    by_client: dict[str, int] = defaultdict(int)
    sessions = events = 0
    rows = active.values_list("source_id", "client_version").annotate(Count("id"), Sum("event_count"))
    for source_id, client_version, count, event_count in rows.order_by():
        by_source[source_id] += count
        if client_version:
            by_client[client_version] += count
        sessions += count
        events += event_count or 0
    return ActiveSessions(dict(by_source), dict(by_client), sessions, events)


def source_rows(usage: FleetUsage, active: ActiveSessions) -> tuple[list[SourceRow], FleetCost]:
    """Per source: the sessions active in the window, its usage and cost; and the fleet's cost, with
    the requests and models no price matched (counted in the tokens, left out of the cost)."""
    prices = prices_load()
    per_source: dict[int, Usage] = defaultdict(Usage)
    costs: dict[int, Decimal] = {}
    unpriced: dict[int, set[str]] = defaultdict(set)
    unpriced_requests = 0
    for (source_id, model), figures in usage.by_source_model.items():
        per_source[source_id].add(figures)
        price = price_match(model=model, prices=prices)
        if price is not None:
            costs[source_id] = costs.get(source_id, Decimal(0)) + usage_cost(
                tokens=figures.tokens, price=price
            )
        elif figures.requests:
            unpriced[source_id].add(model or "(no model)")
            unpriced_requests += figures.requests
    shown = set(per_source) | set(active.by_source)
    rows = [
        SourceRow(
            source=source,
            sessions=active.by_source.get(source.pk, 0),
            usage=per_source.get(source.pk, Usage()),
            cost=costs.get(source.pk),
            unpriced_models=tuple(sorted(unpriced.get(source.pk, ()))),
        )
        for source in Source.objects.filter(pk__in=shown).order_by("name")
    ]
    fleet = FleetCost(
        total=sum(costs.values(), Decimal(0)) if costs else None,
        unpriced_requests=unpriced_requests,
        unpriced_models=tuple(sorted(set().union(*unpriced.values()))),
    )
    return rows, fleet


def client_version_rows(usage: FleetUsage, active: ActiveSessions) -> list[ClientVersionRow]:
    """Per client release seen in the window: the sessions that last ran it and its requests' usage."""
    rows = [
        ClientVersionRow(
            client_version=name,
            sessions=active.by_client_version.get(name, 0),
            requests=figures.requests,
            prompt_tokens=figures.prompt,
            hit_rate=figures.hit_rate,
        )
        for name, figures in usage.by_client_version.items()
    ]
    return sorted(rows, key=lambda row: version_sort_key(row.client_version))
