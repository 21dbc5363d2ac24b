from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import reverse

from dashboard.models.requests import Request
from dashboard.models.sessions import Session


class Severity(models.TextChoices):
    """How urgently a warning asks for a look; decided by its kind alone (:data:`SEVERITY_OF_KIND`)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class WarningQuerySet(models.QuerySet["Warning"]):
    def of_severity(self, severity: str) -> WarningQuerySet:
        return self.filter(kind__in=kinds_of_severity(severity))

    def groups(self) -> models.QuerySet[Any]:
        """One row per kind and session: how many places and occurrences, the tokens and cost at stake
        summed, the latest time it happened; the costliest first, then the latest."""
        return (
            self.order_by()
            .values("kind", "session_id")
            .annotate(
                places=models.Count("id"),
                occurrences=models.Sum("count"),
                tokens=models.Sum("tokens_at_stake"),
                cost=models.Sum("cost_at_stake"),
                happened=models.Max("happened_at"),
            )
            .order_by(
                models.F("cost").desc(nulls_last=True),
                models.F("happened").desc(nulls_last=True),
                "kind",
                "session_id",
            )
        )


class Warning(models.Model):
    """A self-check finding, kept once per kind and place with a count (DESIGN §6.3).

    Besides what and where, a warning keeps what the data says about it: the event it concerns
    (``seq``), when that happened (``happened_at``: the request's start or the event's time, never
    the time it was stored) and what is at stake (``tokens_at_stake``, ``cost_at_stake``; see
    :mod:`dashboard.analysis.warning_stakes`).
    """

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
        INGEST_ERROR = "ingest-error"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="warnings")
    request = models.ForeignKey(
        Request, null=True, blank=True, on_delete=models.CASCADE, related_name="warnings"
    )
    kind = models.CharField(max_length=40, choices=Kind.choices)
    place = models.CharField(max_length=300, help_text="Where: a request, marker, seq or line.")
    message = models.TextField()
    count = models.PositiveIntegerField(default=1)
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The event it concerns, if one.")
    happened_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it happened, from the data: the request's start or the event's time.",
    )
    tokens_at_stake = models.BigIntegerField(
        default=0, help_text="Prompt tokens whose billing the warning puts in doubt."
    )
    cost_at_stake = models.DecimalField(
        max_digits=18,
        decimal_places=8,
        null=True,
        blank=True,
        help_text="What those tokens cost beyond a cache read, in USD; null when no price matches the model.",
    )
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    objects = WarningQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "place"], name="warning_once_per_place"),
        ]
        indexes = [models.Index(fields=["kind", "-last_seen"], name="warning_kind_recent")]
        ordering = ["-last_seen", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} @ {self.place}"

    def get_absolute_url(self) -> str:
        """Where to look: the request's page, else the session's timeline at the event, else the session."""
        if self.request_id is not None:
            return reverse("dashboard:request", args=[self.request_id])
        if self.seq is not None:
            return Session.event_url_of(self.session_id, self.seq)
        return reverse("dashboard:session", args=[self.session_id])

    @property
    def severity(self) -> str:
        return severity_of(self.kind)


class WarningGroup(models.Model):
    """The warnings of one kind in one session, summed: the inbox's row.

    Kept by database triggers on :class:`Warning` (migration 0027), which make a group again from
    its own warnings whenever a statement adds, changes or removes one of them, so every writer
    keeps it and the inbox reads a page of groups in stake order (off an index, on PostgreSQL).
    Equal, at any commit, to ``Warning.objects.groups()`` over the same warnings.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40)
    places = models.PositiveIntegerField(default=0)
    occurrences = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=24, decimal_places=8, null=True, blank=True)
    happened = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "session"], name="warning_group_once_per_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.session_id}: {self.places} places"


SEVERITY_OF_KIND: dict[str, Severity] = {
    # Cachescope could not read or fold the data, or its own cache model is wrong: bugs to fix.
    Warning.Kind.INGEST_ERROR: Severity.ERROR,
    Warning.Kind.FOLD_ERROR: Severity.ERROR,
    Warning.Kind.MODEL_ERROR: Severity.ERROR,
    # The cache costs money it should not: a miss, a wrong credit, a client that renders otherwise.
    Warning.Kind.UNEXPLAINED_MISS: Severity.WARNING,
    Warning.Kind.OVER_CREDIT: Severity.WARNING,
    Warning.Kind.RENDER_MISMATCH: Severity.WARNING,
    Warning.Kind.MARKER_LIMIT: Severity.WARNING,
    # Two readings differ where neither is known to cost anything: worth knowing.
    Warning.Kind.PROVIDER_DISAGREES: Severity.INFO,
    Warning.Kind.FOLD_DIVERGENCE: Severity.INFO,
    Warning.Kind.PROJECTION_MISMATCH: Severity.INFO,
}
"""The one rule that gives each kind its severity; a kind missing here reads as a warning."""


def severity_of(kind: str) -> str:
    return SEVERITY_OF_KIND.get(kind, Severity.WARNING).value


def kinds_of_severity(severity: str) -> list[str]:
    """The kinds whose warnings have ``severity``, for a filter."""
    return [kind for kind in Warning.Kind.values if severity_of(kind) == severity]
