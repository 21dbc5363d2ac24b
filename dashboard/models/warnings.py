from __future__ import annotations

from django.db import models

from dashboard.models.requests import Request
from dashboard.models.sessions import Session


class Warning(models.Model):
    """A self-check finding, kept once per kind and place with a count (DESIGN §6.3)."""

    class Kind(models.TextChoices):
        RENDER_MISMATCH = "render-mismatch"
        OVER_CREDIT = "over-credit"
        UNEXPLAINED_MISS = "unexplained-miss"
        MODEL_ERROR = "model-error"
        MARKER_LIMIT = "marker-limit"
        PROVIDER_DISAGREES = "provider-disagrees"
        FOLD_ERROR = "fold-error"
        FOLD_DIVERGENCE = "fold-divergence"
        PROJECTION_MISMATCH = "projection-mismatch"
        HOST_LOG = "host-log"
        INGEST_ERROR = "ingest-error"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="warnings")
    request = models.ForeignKey(
        Request, null=True, blank=True, on_delete=models.CASCADE, related_name="warnings"
    )
    kind = models.CharField(max_length=40, choices=Kind.choices)
    place = models.CharField(max_length=300, help_text="Where: a request, marker, seq or line.")
    message = models.TextField()
    count = models.PositiveIntegerField(default=1)
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "place"], name="warning_once_per_place"),
        ]
        indexes = [models.Index(fields=["kind", "-last_seen"], name="warning_kind_recent")]
        ordering = ["-last_seen", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} @ {self.place}"
