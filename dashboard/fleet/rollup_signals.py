"""The rollups follow a deleted session: its buckets are noted before its requests go and summed
again without them, in the transaction that deletes it.

Connected when the app is ready (``DashboardConfig.ready``), so the models need not import the
service that keeps their sums.
"""

from __future__ import annotations

from django.db.models.signals import post_delete, pre_delete
from django.dispatch import receiver

from dashboard.fleet.rollups import rollups_refresh, session_buckets
from dashboard.models import Session


@receiver(pre_delete, sender=Session, dispatch_uid="usage-rollups-before-session-delete")
def _note_deleted_buckets(sender: type[Session], instance: Session, **kwargs: object) -> None:
    """Note the buckets a session's requests fall in while they still exist."""
    instance._rollup_buckets = session_buckets(session_ids=[instance.pk])  # type: ignore[attr-defined]


@receiver(post_delete, sender=Session, dispatch_uid="usage-rollups-after-session-delete")
def _refresh_deleted_buckets(sender: type[Session], instance: Session, **kwargs: object) -> None:
    """Recompute those buckets without the session, in the transaction that deletes it."""
    rollups_refresh(buckets=getattr(instance, "_rollup_buckets", {}))
