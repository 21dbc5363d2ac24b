"""The requests list as a tool: filters and sort parsed from the URL, applied to the requests.

The list page and its CSV and JSON exports share this one parse of the query string, so what is
exported is exactly what is shown. Labels, causes, re-processed tokens and costs are read from the
columns the analysis stores beside each request (:class:`~dashboard.models.RequestAnalysis`); a
request not analysed yet has none; sorting by a figure lists the requests that have it. Re-processed
tokens keep their first name in the column (``wasted_tokens``) and in links (``min_wasted``,
``sort=wasted``), so stored rows and saved links still work.

``since`` and ``until`` take ISO times (``2026-01-31``, ``2026-01-31T09:00``, with or without a
zone; without one, the dashboard's own zone): ``since`` is inclusive and ``until`` exclusive, so
the buckets of a chart link to lists that neither overlap nor leave gaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import get_args

from django.db.models import F, Q, QuerySet
from django.http import QueryDict

from dashboard.models import Request
from dashboard.models.requests import CHAIN_MAX_LENGTH
from dashboard.web.query_params import MAX_DB_INTEGER, TIME_EXPECTED, choice_param, iso_moment, text_param
from projections.cache.explain.causes import CauseLabel
from projections.cache.explain.verdict import LABEL_MEANINGS

LABELS = frozenset(LABEL_MEANINGS)
"""The miss labels, without the ``@tier:position`` a ``prefix-changed`` label carries."""
CAUSES = frozenset(get_args(CauseLabel))


@dataclass(frozen=True, slots=True)
class Sort:
    """A sortable column: the field, and the field that breaks its ties, both of one table, so a
    page of a fleet's requests is read off an index ((column, id) on that table) and never sorted whole.

    ``figure``: a column only some requests have (usage a log did not report, an analysis not run
    yet, a model without a price); sorting by it lists the requests that have it.
    """

    column: str
    tie: str = "id"
    figure: bool = True
    label: str = ""
    """What the figure is called, for the page's note on the requests the sort leaves out."""
    missing_when: str = ""
    """Why a request lacks the figure."""


REQUEST_SORTS: dict[str, Sort] = {
    "started": Sort("started_at", figure=False),
    "uncached": Sort(
        "uncached_input_tokens", label="uncached input", missing_when="its usage was not reported"
    ),
    "read": Sort("cache_read_tokens", label="cache read", missing_when="its provider reported no read"),
    "wasted": Sort(
        "analysis__wasted_tokens",
        tie="analysis__request",
        label="re-processed tokens",
        missing_when="it is not analysed yet",
    ),
    "cost": Sort(
        "analysis__cost",
        tie="analysis__request",
        label="cost",
        missing_when="it is not analysed yet or its model has no price",
    ),
}
DEFAULT_SORT = "-started"
SORTS = frozenset(REQUEST_SORTS) | {f"-{key}" for key in REQUEST_SORTS}


@dataclass(frozen=True)
class RequestFilters:
    """What the list is narrowed to and how it is sorted; every field echoes back into the form."""

    source: str = ""
    model: str = ""
    session: str = ""
    label: str = ""
    cause: str = ""
    min_wasted: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    client_version: str = ""
    lineage: str = ""
    sort: str = DEFAULT_SORT
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryDict) -> RequestFilters:
        """Parse the query string; a malformed value is dropped and named in ``errors``."""
        errors: dict[str, str] = {}
        return cls(
            source=text_param(params, "source", errors),
            model=text_param(params, "model", errors),
            session=text_param(params, "session", errors),
            label=choice_param(params, "label", set(LABELS), errors),
            cause=choice_param(params, "cause", set(CAUSES), errors),
            min_wasted=_tokens(params, "min_wasted", errors),
            since=_time(params, "since", errors),
            until=_time(params, "until", errors),
            client_version=text_param(params, "client_version", errors),
            lineage=text_param(params, "lineage", errors, max_length=CHAIN_MAX_LENGTH),
            sort=choice_param(params, "sort", set(SORTS), errors) or DEFAULT_SORT,
            errors=errors,
        )

    def apply(self, requests: QuerySet[Request]) -> QuerySet[Request]:
        """``requests`` narrowed to these filters (sorting is :meth:`ordered`'s business)."""
        if self.source:
            requests = requests.filter(session__source__name=self.source)
        if self.model:
            requests = requests.filter(model=self.model)
        if self.session:
            requests = requests.filter(_session_named(self.session))
        if self.label:
            requests = requests.filter(
                Q(analysis__label=self.label) | Q(analysis__label__startswith=f"{self.label}@")
            )
        if self.cause:
            requests = requests.filter(analysis__cause=self.cause)
        if self.min_wasted is not None:
            requests = requests.filter(analysis__wasted_tokens__gte=self.min_wasted)
        if self.since is not None:
            requests = requests.filter(started_at__gte=self.since)
        if self.until is not None:
            requests = requests.filter(started_at__lt=self.until)
        if self.client_version:
            requests = requests.filter(client_version=self.client_version)
        if self.lineage:
            requests = requests.in_lineage(self.lineage)  # type: ignore[attr-defined]
        return requests

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")

    def ordered(self, requests: QuerySet[Request]) -> QuerySet[Request]:
        """``requests`` filtered and sorted with the id as tie-breaker, as the pages and exports see them."""
        sort = self.sort_column
        requests = self.apply(requests)
        if sort.figure:
            requests = requests.filter(**{f"{sort.column}__isnull": False})
        if self.descending:
            return requests.order_by(F(sort.column).desc(), F(sort.tie).desc())
        return requests.order_by(F(sort.column).asc(), F(sort.tie).asc())

    def left_out(self, requests: QuerySet[Request], *, cap: int) -> int:
        """How many of the filtered ``requests`` a sort by a figure leaves out for lacking it (0 for
        a sort by time), counted up to ``cap`` + 1."""
        sort = self.sort_column
        if not sort.figure:
            return 0
        lacking = self.apply(requests).filter(**{f"{sort.column}__isnull": True})
        return lacking.order_by()[: cap + 1].count()

    @property
    def sort_column(self) -> Sort:
        return REQUEST_SORTS[self.sort.lstrip("-")]

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (the page says "matching these filters" then)."""
        return any(
            (self.source, self.model, self.session, self.label, self.cause, self.client_version, self.lineage)
        ) or any(value is not None for value in (self.min_wasted, self.since, self.until))


def _session_named(name: str) -> Q:
    """A session by its id in the dashboard's URLs or by the id its log gave it."""
    if name.isascii() and name.isdigit() and len(name) <= 18:
        return Q(session_id=int(name)) | Q(session__external_id=name)
    return Q(session__external_id=name)


def _tokens(params: QueryDict, name: str, errors: dict[str, str]) -> int | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw.replace(",", "").replace("_", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_DB_INTEGER:
        errors[name] = f"{raw[:40]!r} is not a whole number of tokens"
        return None
    return value


def _time(params: QueryDict, name: str, errors: dict[str, str]) -> datetime | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        return iso_moment(raw)
    except ValueError:
        errors[name] = f"{raw[:40]!r} is not {TIME_EXPECTED}"
        return None
