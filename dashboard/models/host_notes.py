from __future__ import annotations

from django.db import models

from dashboard.models.requests import Request
from dashboard.models.sessions import Session


class HostNoteQuerySet(models.QuerySet["HostNote"]):
    def search(self, text: str) -> HostNoteQuerySet:
        text = text.strip()
        return self.filter(line__icontains=text) if text else self


class HostNote(models.Model):
    """A line the host logged about its own cache (a ``cache/log`` event, DESIGN §4), kept verbatim.

    Not a warning: the host says what it did ("[kv-unified] … reused 3818 tokens, 2 markers kept"),
    which is context for reading a session, not a problem. The session page lists and searches them.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="host_notes")
    request = models.ForeignKey(
        Request,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="host_notes",
        help_text="The request its requestRef names, when it names one.",
    )
    seq = models.PositiveIntegerField()
    time = models.DateTimeField(null=True, blank=True, help_text="The event's own time.")
    level = models.CharField(max_length=20, blank=True)
    line = models.TextField()

    objects = HostNoteQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="host_note_once_per_seq")]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.line[:60]}"

    def get_absolute_url(self) -> str:
        """The session's timeline at the note's event."""
        return Session.event_url_of(self.session_id, self.seq)
