"""Moving a session to another source: for a log stored under the wrong one, which an ingest of the
same file under the right source found there and did not store twice
(:func:`~dashboard.ingest.session_writer.stored_under_another_source`). An admin's explicit act,
never the ingest's own: which source a host is is the operator's call.

The session takes its subagents and forks with it (they share its source), and the overview's
rollups of both sources are summed again, in one transaction.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from dashboard.access.roles import ADMIN, role_required
from dashboard.fleet.rollups import rollups_refresh, session_buckets
from dashboard.models import Session, Source


class MoveRefused(ValueError):
    """The target source holds a session of the same external id already."""


def session_move(*, session_id: int, to_source: str) -> Session:
    """Move session ``session_id`` and its descendants to source ``to_source`` (made if new)."""
    with transaction.atomic():
        session = Session.objects.select_for_update(no_key=True).select_related("source").get(pk=session_id)
        target, _ = Source.objects.get_or_create(name=to_source)
        if target.pk == session.source_id:
            return session
        family = _with_descendants(session)
        ids = [member.pk for member in family]
        taken = Session.objects.filter(
            source=target, external_id__in=[member.external_id for member in family]
        )
        if taken.exists():
            held = ", ".join(sorted(taken.values_list("external_id", flat=True)))
            raise MoveRefused(f"source {target.name} already holds a session {held}; nothing was moved")
        before = session_buckets(session_ids=ids)
        Session.objects.filter(pk__in=ids).update(source=target)
        buckets = session_buckets(session_ids=ids)
        for source_id, hours in before.items():
            buckets.setdefault(source_id, set()).update(hours)
        rollups_refresh(buckets=buckets)
        session.refresh_from_db()
        return session


def _with_descendants(session: Session) -> list[Session]:
    family, frontier = [session], [session.pk]
    while frontier:
        children = list(Session.objects.filter(parent_id__in=frontier, source_id=session.source_id))
        family += children
        frontier = [child.pk for child in children]
    return family


@require_POST
@role_required(ADMIN)
def session_move_view(request: HttpRequest, session_id: int) -> HttpResponse:
    """Move a session to the source the form names, then go back where the form was."""
    session = get_object_or_404(Session, pk=session_id)
    target = request.POST.get("source", "").strip()[:100]
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = session.get_absolute_url()
    try:
        validate_slug(target)
        moved = session_move(session_id=session_id, to_source=target)
    except ValidationError:
        messages.error(request, f"{target!r} is not a source name: letters, digits, '-' and '_'.")
    except MoveRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, f"Session {moved} now belongs to source {moved.source}.")
    return HttpResponseRedirect(back)
