from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import reduce
from operator import or_
from typing import Any

from django.core.paginator import Paginator
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dashboard.models import Session, Source, Warning, WarningGroup
from dashboard.models.warnings import Severity, kinds_of_severity, severity_of
from dashboard.savings.shown import costliest_misses
from dashboard.web.htmx import HtmxHttpRequest
from dashboard.web.money import usd
from dashboard.web.query_params import choice_param, id_param, report_ignored, text_param

GROUPS_PER_PAGE = 50
PLACES_SHOWN = 5
"""Places listed under a group; the rest are one click away (the inbox filtered to that group)."""


@dataclass
class InboxGroup:
    """The warnings of one kind in one session: the inbox's row."""

    kind: str
    session: Session
    places: int
    occurrences: int
    tokens: int
    cost: Decimal | None
    happened: datetime | None
    warnings: list[Warning] = field(default_factory=list)

    @property
    def severity(self) -> str:
        return severity_of(self.kind)

    @property
    def cost_display(self) -> str:
        return usd(self.cost)

    @property
    def hidden_places(self) -> int:
        return self.places - len(self.warnings)


@require_GET
@vary_on_headers("HX-Request")
def warning_list(request: HtmxHttpRequest) -> HttpResponse:
    template = "dashboard/warning_list.html" + ("#warning-table" if request.htmx else "")
    errors: dict[str, str] = {}
    context = inbox_page(request.GET, errors)
    report_ignored(request, errors)
    return render(request, template, context)


def inbox_page(params: QueryDict, errors: dict[str, str]) -> dict[str, Any]:
    """The filtered inbox: a page of groups (kind and session), costliest first, each with its first
    places. Four queries however many warnings: the groups, their count, their places, the sources.
    The groups are read from :class:`WarningGroup`, which the database keeps summed and indexed by stake."""
    groups = WarningGroup.objects.all()
    kind = choice_param(params, "kind", set(Warning.Kind.values), errors)
    if kind:
        groups = groups.filter(kind=kind)
    severity = choice_param(params, "severity", set(Severity.values), errors)
    if severity:
        groups = groups.filter(kind__in=kinds_of_severity(severity))
    source = text_param(params, "source", errors)
    if source:
        groups = groups.filter(session__source__name=source)
    session_id = id_param(params, "session", errors)
    if session_id is not None:
        groups = groups.filter(session_id=session_id)
    ordered = groups.order_by(
        F("cost").desc(nulls_last=True), F("happened").desc(nulls_last=True), "kind", "session_id"
    ).values("kind", "session_id", "places", "occurrences", "tokens", "cost", "happened")
    page = Paginator(ordered, GROUPS_PER_PAGE).get_page(params.get("page"))
    groups_shown = _groups_with_places(list(page), every_place=bool(kind and session_id is not None))
    return {
        "page": page,
        "groups": groups_shown,
        "kind": kind,
        "kinds": Warning.Kind.choices,
        "severity": severity,
        "severities": Severity.choices,
        "source": source,
        "sources": Source.objects.order_by("name").values_list("name", flat=True),
        "session_filter": next((g.session for g in groups_shown if g.session.pk == session_id), None),
        "session_id": session_id,
        # Beside the self-checks: the misses, which cost the most, from each request's stored miss cost.
        "misses": costliest_misses(source=source, session_id=session_id) if not (kind or severity) else [],
    }


def _groups_with_places(rows: list[dict[str, Any]], *, every_place: bool) -> list[InboxGroup]:
    """The page's groups with their first places (every place with ``every_place``), costliest first,
    read in one query: a group of thousands of places loads the few it shows."""
    if not rows:
        return []
    costliest_first = (
        F("cost_at_stake").desc(nulls_last=True),
        F("happened_at").desc(nulls_last=True),
        F("id").desc(),
    )
    members = (
        Warning.objects.filter(
            reduce(or_, (Q(kind=row["kind"], session_id=row["session_id"]) for row in rows))
        )
        .select_related("session", "session__source", "request")
        .order_by(*costliest_first)
    )
    if not every_place:
        members = members.annotate(
            place_rank=Window(
                RowNumber(), partition_by=[F("kind"), F("session_id")], order_by=costliest_first
            )
        ).filter(place_rank__lte=PLACES_SHOWN)
    by_group: dict[tuple[str, int], list[Warning]] = {}
    for warning in members:
        warning.cost_display = usd(warning.cost_at_stake)  # type: ignore[attr-defined]
        by_group.setdefault((warning.kind, warning.session_id), []).append(warning)
    groups = []
    for row in rows:
        places = by_group.get((row["kind"], row["session_id"]), [])
        if not places:
            continue  # removed between the two queries
        groups.append(
            InboxGroup(
                kind=row["kind"],
                session=places[0].session,
                places=row["places"],
                occurrences=row["occurrences"] or 0,
                tokens=row["tokens"] or 0,
                cost=row["cost"],
                happened=row["happened"],
                warnings=places,
            )
        )
    return groups
