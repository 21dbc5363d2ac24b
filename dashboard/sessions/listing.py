"""The sessions list at fleet scale: filters parsed from the URL, any-column sort, keyset pages.

The list page and its CSV and JSON exports share one parse of the query string, so what is
exported is exactly what is shown. Pages are found by keyset (the sort value and id of the last
row seen), so page 2,000 costs what page 1 costs, and a session ingested meanwhile never shifts
rows between pages.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.http import QueryDict

from dashboard.models import Session
from dashboard.web.query_params import MAX_DB_INTEGER, TIME_EXPECTED, iso_moment, text_param, unstorable
from projections.formats.reading.limits import EARLIEST_TIME, LATEST_TIME

SESSION_SORTS: dict[str, str] = {
    "activity": "last_activity",
    "started": "started_at",
    "source": "source__name",
    "title": "title",
    "events": "event_count",
    "requests": "request_count",
    "uncached": "uncached_input_tokens",
    "read": "cache_read_tokens",
    "write": "cache_write_tokens",
    "output": "output_tokens",
    "hit_rate": "hit_rate",
    "cost": "cost_usd",
    "warnings": "warning_count",
}
DEFAULT_SORT = "-activity"
_TIME_SORTS = frozenset({"last_activity", "started_at"})
_TEXT_SORTS = frozenset({"source__name", "title"})
"""The other sort columns are numbers; a cursor's value must be of its column's kind."""
PAGE_SIZE = 50
_LABEL_KEY = re.compile(r"[A-Za-z0-9_.-]{1,200}")
"""What a label key may look like in the filter: the attribute names telemetry uses."""

# Nullable sort columns sort their nulls as the lowest value, so a keyset can step over them.
_NULL_AS: dict[str, Any] = {
    "hit_rate": Value(-1.0),
    # Below a real 0: a session whose provider never reported the figure.
    "cache_read_tokens": Value(-1),
    "cache_write_tokens": Value(-1),
    "started_at": Value(datetime(1970, 1, 1, tzinfo=UTC)),
    # Below a real $0: a session no price matched, or not priced yet.
    "cost_usd": Value(Decimal(-1)),
}


@dataclass(frozen=True)
class SessionFilters:
    """What the list is narrowed to; every field echoes back into the form."""

    q: str = ""
    source: str = ""
    model: str = ""
    client_version: str = ""
    label: str = ""
    """``key=value`` (``user.email=ana@example.com``) or a bare ``key``: sessions with that label."""
    started_from: date | None = None
    started_to: date | None = None
    since: datetime | None = None
    """With ``until``: the sessions active in ``[since, until)`` (a chart's bucket on the overview)."""
    until: datetime | None = None
    job: int | None = None
    """An ingest job's number: the sessions it added or updated."""
    warnings: bool = False
    hit_min: float | None = None
    hit_max: float | None = None
    min_tokens: int | None = None
    sort: str = DEFAULT_SORT
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryDict) -> SessionFilters:
        """Parse the query string; a malformed value is dropped and named in ``errors``."""
        errors: dict[str, str] = {}
        sort = params.get("sort", DEFAULT_SORT)
        if sort.lstrip("-") not in SESSION_SORTS:
            sort = DEFAULT_SORT
        return cls(
            q=text_param(params, "q", errors),
            source=text_param(params, "source", errors),
            model=text_param(params, "model", errors),
            client_version=text_param(params, "client_version", errors),
            label=_label(text_param(params, "label", errors), errors),
            started_from=_parse(params, "from", _day, errors, _DAY_EXPECTED),
            started_to=_parse(params, "to", _day, errors, _DAY_EXPECTED),
            since=_parse(params, "since", iso_moment, errors, TIME_EXPECTED),
            until=_parse(params, "until", iso_moment, errors, TIME_EXPECTED),
            job=_parse(params, "job", _count, errors, "an ingest job's number"),
            warnings=params.get("warnings", "") in {"1", "on", "true"},
            hit_min=_parse(params, "hit_min", _percent, errors, "a percentage from 0 to 100"),
            hit_max=_parse(params, "hit_max", _percent, errors, "a percentage from 0 to 100"),
            min_tokens=_parse(params, "min_tokens", _count, errors, "a whole number of tokens"),
            sort=sort,
            errors=errors,
        )

    def apply(self, sessions: QuerySet[Session]) -> QuerySet[Session]:
        """``sessions`` narrowed to these filters (sorting is the page's business)."""
        if self.source:
            sessions = sessions.filter(source__name=self.source)
        if self.model:
            sessions = sessions.filter(models_used__contains=self.model)
        if self.client_version:
            sessions = sessions.filter(client_version=self.client_version)
        if self.label:
            key, _, value = self.label.partition("=")
            sessions = sessions.labelled(key.strip(), value.strip())
        if self.started_from:
            sessions = sessions.filter(started_at__gte=_start_of(self.started_from))
        if self.started_to:
            sessions = sessions.filter(started_at__lt=_start_of(self.started_to, days=1))
        if self.since or self.until:
            sessions = sessions.active_between(self.since, self.until)
        if self.job is not None:
            sessions = sessions.filter(ingest_jobs=self.job)
        if self.warnings:
            sessions = sessions.filter(warning_count__gt=0)
        if self.hit_min is not None:
            sessions = sessions.filter(hit_rate__gte=self.hit_min / 100)
        if self.hit_max is not None:
            sessions = sessions.filter(hit_rate__lte=self.hit_max / 100)
        if self.min_tokens is not None:
            prompt = (
                F("uncached_input_tokens")
                + Coalesce(F("cache_read_tokens"), 0)
                + Coalesce(F("cache_write_tokens"), 0)
            )
            sessions = sessions.alias(prompt_tokens=prompt).filter(prompt_tokens__gte=self.min_tokens)
        return sessions.search(self.q)

    @property
    def sort_field(self) -> str:
        return SESSION_SORTS[self.sort.lstrip("-")]

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")

    def ordered(self, sessions: QuerySet[Session]) -> QuerySet[Session]:
        """``sessions`` filtered and sorted with the id as tie-breaker, as the pages and exports see them."""
        sessions = self.apply(sessions).annotate(sort_key=sort_expression(self.sort_field))
        if self.descending:
            return sessions.order_by("-sort_key", "-id")
        return sessions.order_by("sort_key", "id")


@dataclass(frozen=True)
class KeysetPage:
    rows: list[Session]
    total: int
    next_cursor: str
    previous_cursor: str


def keyset_page(filters: SessionFilters, sessions: QuerySet[Session], params: QueryDict) -> KeysetPage:
    """One page of ``sessions`` after the ``after`` cursor, or before the ``before`` one."""
    ordered = filters.ordered(sessions)
    total = filters.apply(sessions).count()
    after = _decode(params.get("after", ""), filters.sort_field)
    before = _decode(params.get("before", ""), filters.sort_field)
    if before is not None:
        # Walk backwards from the cursor, then put the rows back in display order.
        backwards = ordered.filter(_beyond(before, not filters.descending)).reverse()
        rows = list(backwards[: PAGE_SIZE + 1])
        more_before = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE][::-1]
        more_after = True
    else:
        if after is not None:
            ordered = ordered.filter(_beyond(after, filters.descending))
        rows = list(ordered[: PAGE_SIZE + 1])
        more_after = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        more_before = after is not None
    return KeysetPage(
        rows=rows,
        total=total,
        next_cursor=_encode(rows[-1]) if rows and more_after else "",
        previous_cursor=_encode(rows[0]) if rows and more_before else "",
    )


def sort_expression(field_name: str) -> Any:
    """The session column ``field_name`` as its sort index holds it (a nullable one with its nulls
    as the lowest value): an order on anything else reads and sorts the whole table."""
    if field_name in _NULL_AS:
        return Coalesce(F(field_name), _NULL_AS[field_name])
    return F(field_name)


def _beyond(cursor: tuple[Any, int], descending: bool) -> Q:
    """Rows that come after ``cursor`` in the given direction of the (sort key, id) order."""
    value, pk = cursor
    # The outer bound (<= or >=) is implied by the disjunction, but stating it lets the database
    # start its index scan at the cursor instead of reading and discarding every earlier row.
    if descending:
        return Q(sort_key__lte=value) & (Q(sort_key__lt=value) | Q(sort_key=value, id__lt=pk))
    return Q(sort_key__gte=value) & (Q(sort_key__gt=value) | Q(sort_key=value, id__gt=pk))


def _encode(session: Session) -> str:
    value = session.sort_key  # type: ignore[attr-defined]
    if isinstance(value, datetime):
        payload = ["t", value.isoformat(), session.pk]
    elif isinstance(value, Decimal):
        payload = ["d", str(value), session.pk]  # exact: a float could step over a row of equal cost
    else:
        payload = ["v", value, session.pk]
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _decode(cursor: str, sort_field: str) -> tuple[Any, int] | None:
    """A cursor back into (sort value, id); a mangled one, or one whose value is not of the sort
    column's kind (a text for a time, a number past a 64-bit column), means "from the start"."""
    if not cursor or len(cursor) > 2000:
        return None
    try:
        kind, value, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if sort_field in _TIME_SORTS:
            value = _cursor_time(kind, value)
        elif sort_field in _TEXT_SORTS:
            value = _cursor_text(kind, value)
        else:
            value = _cursor_number(kind, value)
        if isinstance(pk, bool) or not isinstance(pk, int) or not 0 < pk <= MAX_DB_INTEGER:
            return None
    except (ValueError, TypeError, binascii.Error):
        return None
    return value, pk


def _cursor_time(kind: Any, value: Any) -> datetime:
    if kind != "t" or not isinstance(value, str):
        raise ValueError("a time cursor holds an ISO time")
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _cursor_text(kind: Any, value: Any) -> str:
    if kind != "v" or not isinstance(value, str) or unstorable(value):
        raise ValueError("a text cursor holds storable text")
    return value


def _cursor_number(kind: Any, value: Any) -> int | float | Decimal:
    if kind == "d" and isinstance(value, str) and len(value) <= 40:
        try:
            amount = Decimal(value)
        except InvalidOperation as error:
            raise ValueError("a cost cursor holds a decimal") from error
        if not amount.is_finite() or abs(amount) > MAX_DB_INTEGER:
            raise ValueError("a cost cursor holds a cost a column can hold")
        return amount
    if kind != "v" or isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a number cursor holds a number")
    if not math.isfinite(value) or abs(value) > MAX_DB_INTEGER:
        raise ValueError("a number cursor holds a number a column can hold")
    return value


def _parse(params: QueryDict, name: str, convert: Any, errors: dict[str, str], expected: str) -> Any:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        return convert(raw)
    except ValueError:
        errors[name] = f"{raw!r} is not {expected}"
        return None


def _label(raw: str, errors: dict[str, str]) -> str:
    key = raw.partition("=")[0].strip()
    if raw and not _LABEL_KEY.fullmatch(key):
        errors["label"] = f"{raw[:40]!r} is not key=value with a key of letters, digits, '.', '_' or '-'"
        return ""
    return raw


def _percent(raw: str) -> float:
    value = float(raw)
    if not 0 <= value <= 100:
        raise ValueError(raw)
    return value


def _count(raw: str) -> int:
    value = int(raw.replace(",", "").replace("_", ""))
    if not 0 <= value <= MAX_DB_INTEGER:
        raise ValueError(raw)
    return value


_DAY_EXPECTED = f"a date like 2026-01-31, from {EARLIEST_TIME.date()} to {LATEST_TIME.date()}"


def _day(raw: str) -> date:
    # A day at the edge of the calendar has no next day to bound a "to" filter with.
    day = date.fromisoformat(raw)
    if not EARLIEST_TIME.date() <= day <= LATEST_TIME.date():
        raise ValueError(raw)
    return day


def _start_of(day: date, *, days: int = 0) -> datetime:
    return datetime.combine(day + timedelta(days=days), time.min, tzinfo=UTC)
