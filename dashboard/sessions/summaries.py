"""The summary columns of a session, recomputed from its stored rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.db.models import Count, Max, Min, Q, Sum

from dashboard.models import Event, Request, Session
from projections.hit_rate import hit_rate
from projections.wall_clock import WALL_CLOCK_FROM, is_wall_clock


@dataclass
class RequestSums:
    """What the summary reads of a session's requests, summed as SQL sums: a figure that none of
    them reported stays ``None``, which the hit rate tells from 0."""

    requests: int = 0
    uncached: int | None = None
    read: int | None = None
    write_5m: int | None = None
    write_1h: int | None = None
    output: int | None = None
    first_request: datetime | None = None
    last_request: datetime | None = None
    models: set[str] = field(default_factory=set)

    def add(self, row: Request) -> None:
        self.requests += 1
        if row.model:
            self.models.add(row.model)
        self.uncached = _sum(self.uncached, row.uncached_input_tokens)
        self.read = _sum(self.read, row.cache_read_tokens)
        self.write_5m = _sum(self.write_5m, row.cache_write_5m_tokens)
        self.write_1h = _sum(self.write_1h, row.cache_write_1h_tokens)
        self.output = _sum(self.output, row.output_tokens)
        if row.started_at is not None:
            if self.first_request is None or row.started_at < self.first_request:
                self.first_request = row.started_at
            if self.last_request is None or row.started_at > self.last_request:
                self.last_request = row.started_at


def _sum(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    # As the integer column stores it.
    return int(value) if total is None else total + int(value)


def session_refresh_summary(
    session: Session,
    *,
    events_added: int | None = None,
    event_times: tuple[datetime, datetime] | None = None,
    new_requests: RequestSums | None = None,
) -> None:
    """Recompute the list-page columns of ``session`` from its requests and warnings.

    Events are append-only, so an ingest that knows how many it added (and their time range) has
    the event figures updated in place; without that, they are counted from the stored log.
    ``new_requests``: for a session the caller's transaction created, the sums of the requests it
    wrote, which are all the session has; they are not read back, nor its warnings, which a session
    cannot have before its first commit.
    """
    if new_requests is None:
        usage = Request.objects.filter(session=session).aggregate(
            requests=Count("id"),
            uncached=Sum("uncached_input_tokens"),
            read=Sum("cache_read_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
            output=Sum("output_tokens"),
            first_request=Min("started_at"),
            last_request=Max("started_at"),
        )
        models = list(
            Request.objects.filter(session=session)
            .exclude(model="")
            .order_by("model")
            .values_list("model", flat=True)
            .distinct()
        )
    else:
        usage = asdict(new_requests)
        models = sorted(new_requests.models)
    had_events = session.event_count > 0
    if events_added is None:
        dated = Q(time__gte=WALL_CLOCK_FROM)
        events = Event.objects.filter(session=session).aggregate(
            count=Count("id"), first=Min("time", filter=dated), last=Max("time", filter=dated)
        )
    else:
        first, last = event_times if event_times is not None else (None, None)
        events = {"count": session.event_count + events_added, "first": first, "last": last}
    session.request_count = usage["requests"]
    session.uncached_input_tokens = usage["uncached"] or 0
    # The sums are null when no request reported the bucket: the pages show that as unknown, and
    # the hit rate tells it from 0.
    session.cache_read_tokens = usage["read"]
    session.cache_write_1h_tokens = usage["write_1h"] or 0
    writes_reported = usage["write_5m"] is not None or usage["write_1h"] is not None
    session.cache_write_tokens = (
        (usage["write_5m"] or 0) + session.cache_write_1h_tokens if writes_reported else None
    )
    session.output_tokens = usage["output"] or 0
    session.hit_rate = hit_rate(
        read=usage["read"], uncached=usage["uncached"], writes=session.cache_write_tokens
    )
    session.event_count = events["count"]
    session.models_used = ",".join(models)[:500]
    session.warning_count = 0 if new_requests is not None else session.warnings.count()
    # The earliest instant known: a header's creation time that its own events precede (a
    # snapshot's fixed clock) would otherwise start the session after it ended.
    starts = [t for t in (session.started_at, events["first"], usage["first_request"]) if is_wall_clock(t)]
    session.started_at = min(starts) if starts else None
    instants = [t for t in (events["last"], usage["last_request"], session.ended_at) if is_wall_clock(t)]
    if events_added is not None and had_events and is_wall_clock(session.last_activity):
        instants.append(session.last_activity)  # an update keeps the activity it already had
    if instants:
        session.last_activity = max(instants)
    elif session.started_at is not None:
        session.last_activity = session.started_at
    session.save()
