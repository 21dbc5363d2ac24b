"""The warnings a session's folds record, one per kind and place, and the count the list page shows."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from dashboard.models import Event, Session, Warning


def session_warn(*, session_id: int, kind: str, place: str, message: str, seq: int | None = None) -> None:
    """Record a warning once per session, kind and place; a repeat raises its count and refreshes the text.

    ``seq``: the event it concerns, whose time dates the warning. Nothing that concerns no request
    puts any tokens at stake.
    """
    happened_at = None
    if seq is not None:
        times = Event.objects.filter(session_id=session_id, seq=seq).values_list("time", flat=True)
        happened_at = times.first()
    with transaction.atomic():
        warning, created = Warning.objects.get_or_create(
            session_id=session_id,
            kind=kind,
            place=place[:300],
            defaults={"message": message, "seq": seq, "happened_at": happened_at, "cost_at_stake": 0},
        )
        if not created:
            Warning.objects.filter(pk=warning.pk).update(
                count=F("count") + 1, message=message, last_seen=timezone.now()
            )


def session_refresh_warning_count(*, session_id: int) -> None:
    """Keep the list page's warning column equal to the session's warnings (one query)."""
    sessions_refresh_warning_count(session_ids=[session_id])


def sessions_refresh_warning_count(*, session_ids: Sequence[int]) -> int:
    """:func:`session_refresh_warning_count` for many sessions, in one query; how many changed.

    A session whose count is already right is not written: the column is indexed for the list's
    sort, so on PostgreSQL an update writes a new version of the row and of every index on it.
    """
    count = (
        Warning.objects.filter(session_id=OuterRef("pk"))
        .order_by()
        .values("session_id")
        .annotate(count=Count("id"))
        .values("count")
    )
    counted = Coalesce(Subquery(count), 0)
    return (
        Session.objects.filter(pk__in=session_ids)
        .exclude(warning_count=counted)
        .update(warning_count=counted)
    )
