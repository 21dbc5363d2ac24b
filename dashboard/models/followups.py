"""The outbox of follow-up work: a session whose folds and analysis are still to be enqueued."""

from __future__ import annotations

from django.db import models

from dashboard.models.sessions import Session


class PendingFollowup(models.Model):
    """A session stored whose follow-ups are not yet known to be on the task queue.

    Written in the same transaction as the session's rows, and deleted once its follow-ups are
    enqueued, so a request cut off between its commit and its enqueues leaves this row behind, and
    :func:`dashboard.ingest.followups.followups_resend` enqueues them later.
    """

    session = models.OneToOneField(Session, primary_key=True, on_delete=models.CASCADE, related_name="+")
    since = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"follow-ups of session {self.session_id} pending since {self.since:%Y-%m-%d %H:%M}"
