"""The figures alert rules judge: per slice of the fleet and window, the hit rate over eligible
requests beside the plain one, the tokens each model processed, the miss cost and the causes.

A request is **eligible** when the previous request of its lineage (the lineage every page reads,
:func:`~dashboard.models.requests.current_lineage`) started within the TTL before it: an hour when
that request wrote 1-hour tokens, else its model's default write lifetime
(:func:`~dashboard.costs.pricing.default_write_lifetime`). Only an eligible request could have read
its predecessor's prefix, so session starts and long idles do not count against the cache. A request
that reported no cache figure counts in neither hit rate (unknown is not a miss).

Figures are summed at the finest grain (source, client version and model) in one pass over the
requests of both windows, ordered as the lineages run; a rule's slice sums those cells. The pass
reads the requests table, not the hourly rollups, since eligibility is a property of consecutive
requests that no hourly sum keeps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import F

from dashboard.costs.pricing import (
    MILLION,
    TTL_1H,
    ZERO,
    Price,
    Tokens,
    default_write_lifetime,
    price_match,
    reprocessed_tokens,
)
from dashboard.models import Request
from dashboard.models.requests import current_lineage

MARGIN = TTL_1H
"""How far before the baseline the pass reads, so the first requests of the baseline find their
predecessors (no TTL is longer than an hour)."""
NOT_ANALYSED = "not analysed"
NO_LABEL = "no label"

Cell = tuple[str, str, str]
"""(source name, client version, model): the finest grain figures are summed at."""


@dataclass(frozen=True, slots=True)
class Windows:
    """The baseline ``[baseline_start, current_start)`` and the current ``[current_start, end)``."""

    baseline_start: datetime
    current_start: datetime
    end: datetime

    @classmethod
    def ending(cls, end: datetime, *, current_hours: int, baseline_days: int) -> Windows:
        current_start = end - timedelta(hours=current_hours)
        return cls(current_start - timedelta(days=baseline_days), current_start, end)

    @property
    def current_days(self) -> Decimal:
        return Decimal((self.end - self.current_start).total_seconds()) / Decimal(86_400)

    @property
    def baseline_days(self) -> Decimal:
        return Decimal((self.current_start - self.baseline_start).total_seconds()) / Decimal(86_400)

    def as_dict(self) -> dict[str, str]:
        return {
            "baseline_start": self.baseline_start.isoformat(),
            "current_start": self.current_start.isoformat(),
            "end": self.end.isoformat(),
        }


@dataclass(slots=True)
class Figures:
    """One window's sums over some requests (a cell, or a slice of cells)."""

    requests: int = 0
    """Requests that reported a cache figure."""
    plain_read: int = 0
    plain_prompt: int = 0
    eligible: int = 0
    eligible_read: int = 0
    eligible_prompt: int = 0
    eligible_tokens: dict[str, list[int]] = field(default_factory=dict)
    """By model: the eligible requests' uncached, read, 5-minute and 1-hour write tokens."""
    miss_cost: Decimal = ZERO
    causes: Counter[str] = field(default_factory=Counter)
    """Eligible requests by first-change cause or miss label (what a cause-share rule counts)."""
    missed_tokens: Counter[str] = field(default_factory=Counter)
    """Tokens eligible requests processed again, by what their analysis says caused it."""
    missed_requests: Counter[str] = field(default_factory=Counter)
    sessions: set[int] = field(default_factory=set)

    def add(self, other: Figures) -> None:
        self.requests += other.requests
        self.plain_read += other.plain_read
        self.plain_prompt += other.plain_prompt
        self.eligible += other.eligible
        self.eligible_read += other.eligible_read
        self.eligible_prompt += other.eligible_prompt
        for model, sums in other.eligible_tokens.items():
            mine = self.eligible_tokens.setdefault(model, [0, 0, 0, 0])
            for index, value in enumerate(sums):
                mine[index] += value
        self.miss_cost += other.miss_cost
        self.causes.update(other.causes)
        self.missed_tokens.update(other.missed_tokens)
        self.missed_requests.update(other.missed_requests)
        self.sessions |= other.sessions

    @property
    def hit_rate(self) -> float | None:
        """Read ÷ prompt over the eligible requests; ``None`` with none."""
        return self.eligible_read / self.eligible_prompt if self.eligible_prompt else None

    @property
    def plain_hit_rate(self) -> float | None:
        """Read ÷ prompt over every request that reported a cache figure."""
        return self.plain_read / self.plain_prompt if self.plain_prompt else None

    def cause_share(self, cause: str) -> float | None:
        return self.causes[cause] / self.eligible if self.eligible else None


@dataclass(slots=True)
class FleetFigures:
    """Both windows' figures by cell."""

    windows: Windows
    baseline: dict[Cell, Figures] = field(default_factory=dict)
    current: dict[Cell, Figures] = field(default_factory=dict)
    source_ids: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Row:
    session_id: int
    source_id: int
    source: str
    lineage: str
    model: str
    client_version: str
    started_at: datetime | None
    tokens: Tokens
    reported: bool
    cause: str | None
    label: str | None
    has_analysis: bool


def fleet_figures(*, windows: Windows, prices: Sequence[Price]) -> FleetFigures:
    """Sum both windows' figures by cell in one pass over their requests."""
    fleet = FleetFigures(windows)
    previous: dict[tuple[int, str], _Row] = {}
    matched: dict[str, Price | None] = {}
    for row in _rows(windows.baseline_start - MARGIN, windows.end):
        key = (row.session_id, row.lineage)
        before = previous.get(key)
        previous[key] = row
        if row.started_at is None or row.started_at < windows.baseline_start:
            continue
        cells = fleet.current if row.started_at >= windows.current_start else fleet.baseline
        fleet.source_ids[row.source] = row.source_id
        cell = (row.source, row.client_version, row.model)
        figures = cells.get(cell)
        if figures is None:
            figures = cells[cell] = Figures()
        if row.model not in matched:
            matched[row.model] = price_match(model=row.model, prices=prices)
        _count(figures, row, before, matched[row.model])
    return fleet


def is_eligible(row_started: datetime | None, before: _Row | None) -> bool:
    """Whether the previous request of the lineage started within its TTL before this one."""
    if before is None or row_started is None or before.started_at is None:
        return False
    ttl = TTL_1H if before.tokens.cache_write_1h > 0 else default_write_lifetime(before.model)
    return row_started - before.started_at <= ttl


def miss_cost(missed: int, tokens: Tokens, price: Price | None) -> Decimal:
    """What ``missed`` re-processed tokens cost beyond the read price (DESIGN §6.4): at the rate the
    request's writes were billed at, or the input price when it wrote nothing (automatic caching
    bills a miss as plain input)."""
    if price is None or missed <= 0:
        return ZERO
    return Decimal(missed) * (write_rate(tokens, price) - price.cache_read) / MILLION


def write_rate(tokens: Tokens, price: Price) -> Decimal:
    """USD per million of the tokens a request wrote, its 5-minute and 1-hour writes blended; the
    input price when it wrote none."""
    written = tokens.cache_write_5m + tokens.cache_write_1h
    if written == 0:
        return price.input
    return (
        tokens.cache_write_5m * price.cache_write_5m + tokens.cache_write_1h * price.cache_write_1h
    ) / Decimal(written)


def _count(figures: Figures, row: _Row, before: _Row | None, price: Price | None) -> None:
    if not row.reported:
        return
    tokens = row.tokens
    prompt = tokens.uncached_input + tokens.cache_read + tokens.cache_write_5m + tokens.cache_write_1h
    figures.requests += 1
    figures.plain_read += tokens.cache_read
    figures.plain_prompt += prompt
    figures.sessions.add(row.session_id)
    if before is not None:
        missed = reprocessed_tokens(before.tokens, tokens)
        figures.miss_cost += miss_cost(missed, tokens, price)
    else:
        missed = 0
    if not is_eligible(row.started_at, before):
        return
    figures.eligible += 1
    figures.eligible_read += tokens.cache_read
    figures.eligible_prompt += prompt
    sums = figures.eligible_tokens.setdefault(row.model, [0, 0, 0, 0])
    for index, value in enumerate(
        (tokens.uncached_input, tokens.cache_read, tokens.cache_write_5m, tokens.cache_write_1h)
    ):
        sums[index] += value
    for name in _cause_names(row):
        figures.causes[name] += 1
    if missed > 0:
        behind = _cause_behind(row)
        figures.missed_tokens[behind] += missed
        figures.missed_requests[behind] += 1


def _cause_names(row: _Row) -> Iterator[str]:
    if row.cause:
        yield row.cause
    if row.label:
        yield row.label.split("@", 1)[0]


def _cause_behind(row: _Row) -> str:
    """What a miss is put down to: its first-change cause, else its miss label (with the tier)."""
    if not row.has_analysis:
        return NOT_ANALYSED
    if row.cause:
        return row.cause
    if row.label:
        return row.label.split(":", 1)[0]
    return NO_LABEL


def _rows(since: datetime, until: datetime) -> Iterable[_Row]:
    rows = (
        Request.objects.filter(started_at__gte=since, started_at__lt=until)
        .annotate(row_lineage=current_lineage(), source_name=F("session__source__name"))
        .order_by("session_id", "ordinal", "id")
        .values_list(
            "session_id",
            "session__source_id",
            "source_name",
            "row_lineage",
            "model",
            "client_version",
            "started_at",
            "uncached_input_tokens",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "analysis__cause",
            "analysis__label",
            "analysis__id",
        )
    )
    for (
        session_id,
        source_id,
        source,
        lineage,
        model,
        version,
        started,
        uncached,
        read,
        write_5m,
        write_1h,
        cause,
        label,
        analysis_id,
    ) in rows.iterator(chunk_size=5_000):
        yield _Row(
            session_id,
            source_id,
            source,
            lineage,
            model,
            version,
            started,
            Tokens(uncached or 0, read or 0, write_5m or 0, write_1h or 0, 0),
            read is not None or write_5m is not None or write_1h is not None,
            cause,
            label,
            analysis_id is not None,
        )
