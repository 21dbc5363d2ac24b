"""Alert rules, the alerts they open and resolve, and the notifications each alert sends.

A rule compares a metric of each slice of the fleet (by source, client version and model) over a
current window against a baseline window; :mod:`dashboard.alerts.evaluation` opens one alert per
rule and slice while the condition holds and resolves it once when it clears. Each alert event
(firing, resolved) is one notification row per destination, unique, so nothing is ever sent twice
for the same condition, however many evaluators run.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, get_args
from urllib.parse import urlparse

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import models
from django.urls import reverse

from dashboard.models.sessions import Source

SLICE_DIMENSIONS = ("source", "client_version", "model")
"""What a rule may slice the fleet by; ``all`` (no dimension) judges the fleet as one."""
SLICE_ALL = "all"


def slice_dimensions(value: str) -> tuple[str, ...]:
    """The dimensions of a slice as stored (``"source,client_version"``, ``"all"``), in their order."""
    if value.strip() == SLICE_ALL:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def validate_slice(value: str) -> None:
    """A slice names known dimensions, each once, or is ``all``."""
    parts = slice_dimensions(value)
    if value.strip() != SLICE_ALL and not parts:
        raise ValidationError(
            f"the slice is empty: use {SLICE_ALL!r} or some of {', '.join(SLICE_DIMENSIONS)}"
        )
    unknown = [part for part in parts if part not in SLICE_DIMENSIONS]
    if unknown:
        raise ValidationError(
            f"unknown slice {', '.join(unknown)}: use {SLICE_ALL!r} or a comma-separated list of "
            f"{', '.join(SLICE_DIMENSIONS)}"
        )
    if len(set(parts)) != len(parts):
        raise ValidationError(f"the slice {value!r} names a dimension twice")


def validate_webhook_url(value: str) -> None:
    """An http(s) URL: a webhook is a JSON POST, no other scheme can carry one."""
    scheme = urlparse(value).scheme.lower()
    if scheme not in ("http", "https"):
        raise ValidationError(
            f"the webhook URL {value!r} is not http(s): it must start with http:// or https://"
        )
    URLValidator(schemes=["http", "https"], message=f"the webhook URL {value!r} is not a valid URL")(value)


def email_addresses(value: str) -> list[str]:
    """The addresses of a comma-separated list, blanks dropped."""
    return [part.strip() for part in value.split(",") if part.strip()]


def validate_email_list(value: str) -> None:
    for address in email_addresses(value):
        try:
            validate_email(address)
        except ValidationError:
            raise ValidationError(f"{address!r} is not an e-mail address") from None


def cause_choices() -> frozenset[str]:
    """What a cause-share rule may count: a first-change cause, or a miss label (without its tier)."""
    # Imported here: the engine's explain stage is not loaded by every command that starts Django.
    from projections.cache.explain.causes import CauseLabel
    from projections.cache.explain.verdict import LABEL_MEANINGS

    return frozenset(get_args(CauseLabel)) | frozenset(LABEL_MEANINGS)


class AlertRule(models.Model):
    """What to watch, per slice of the fleet: a metric over the current window against a baseline."""

    class Metric(models.TextChoices):
        HIT_RATE = "hit_rate", "hit rate (eligible requests)"
        MISS_COST = "miss_cost", "cost of misses per day"
        CAUSE_SHARE = "cause_share", "share of requests with a cause"

    name = models.CharField(max_length=100, unique=True)
    metric = models.CharField(max_length=20, choices=Metric.choices, default=Metric.HIT_RATE)
    cause = models.CharField(
        max_length=60,
        blank=True,
        help_text="For the cause share: a first-change cause (system-changed, …) or a miss label "
        "(ttl-expired, …).",
    )
    slice = models.CharField(
        max_length=60,
        default="source,client_version",
        validators=[validate_slice],
        help_text="Comma-separated dimensions to judge apart (source, client_version, model), or 'all'.",
    )
    current_hours = models.PositiveIntegerField(default=24, help_text="The current window: the last N hours.")
    baseline_days = models.PositiveIntegerField(
        default=7, help_text="The baseline: the N days before the current window."
    )
    threshold = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        default=Decimal(15),
        help_text="Hit rate: points down; cause share: points up; miss cost: USD a day up.",
    )
    min_requests = models.PositiveIntegerField(
        default=50, help_text="Eligible requests each window needs before the rule judges it."
    )
    webhook_url = models.CharField(
        max_length=500,
        blank=True,
        validators=[validate_webhook_url],
        help_text="Where to POST; empty: CACHESCOPE_ALERT_WEBHOOK.",
    )
    email_to = models.CharField(
        max_length=500,
        blank=True,
        validators=[validate_email_list],
        help_text="Comma-separated addresses; empty: CACHESCOPE_ALERT_EMAIL.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.metric == self.Metric.CAUSE_SHARE:
            if not self.cause:
                raise ValidationError({"cause": "a cause-share rule needs a cause"})
            known = cause_choices()
            if self.cause not in known:
                raise ValidationError(
                    {"cause": f"unknown cause {self.cause!r}: use one of {', '.join(sorted(known))}"}
                )
        elif self.cause:
            raise ValidationError({"cause": "only a cause-share rule takes a cause"})
        if self.current_hours < 1 or self.baseline_days < 1:
            raise ValidationError("both windows must be at least an hour and a day long")

    @property
    def dimensions(self) -> tuple[str, ...]:
        return slice_dimensions(self.slice)


DEFAULT_RULE_NAME = "Hit rate per source and client version"
DEFAULT_RULE = {
    "metric": "hit_rate",
    "slice": "source,client_version",
    "current_hours": 24,
    "baseline_days": 7,
    "threshold": Decimal(15),
    "min_requests": 50,
}
"""The rule every install starts with (migration 0037 adds it): a source's release whose hit rate
over eligible requests falls 15 points below the 7 days before, with 50 requests in each window."""


class AlertQuerySet(models.QuerySet["Alert"]):
    def open(self) -> AlertQuerySet:
        return self.filter(status=Alert.Status.OPEN)


class Alert(models.Model):
    """One rule's condition holding for one slice: opened once, resolved once."""

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    slice_key = models.CharField(max_length=400, help_text="The slice's values, as the rule slices.")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source_name = models.CharField(max_length=100, blank=True)
    client_version = models.CharField(max_length=60, blank=True)
    model = models.CharField(max_length=120, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(help_text="The last evaluation that found the condition holding.")
    baseline = models.FloatField(help_text="The metric over the baseline window (hit rates as fractions).")
    current = models.FloatField(help_text="The metric over the current window.")
    baseline_plain = models.FloatField(
        null=True, blank=True, help_text="The plain hit rate over every request of the baseline window."
    )
    current_plain = models.FloatField(null=True, blank=True)
    baseline_requests = models.PositiveIntegerField(default=0)
    current_requests = models.PositiveIntegerField(default=0)
    baseline_scope = models.CharField(
        max_length=200, blank=True, help_text="What the baseline was read over, when not the slice itself."
    )
    extra_cost_usd_per_day = models.DecimalField(max_digits=18, decimal_places=6, default=Decimal(0))
    top_causes = models.JSONField(default=list, blank=True)
    window = models.JSONField(default=dict, blank=True, help_text="The windows' bounds, as ISO times.")
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=150, blank=True)
    muted_until = models.DateTimeField(null=True, blank=True)

    objects = AlertQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            # At most one open alert per rule and slice: a second evaluator cannot open another.
            models.UniqueConstraint(
                fields=["rule", "slice_key"],
                condition=models.Q(status="open"),
                name="alert_one_open_per_slice",
            )
        ]
        indexes = [models.Index(fields=["status", "opened_at"], name="alert_status_opened")]

    def __str__(self) -> str:
        return f"{self.rule} {self.slice_label}: {self.status}"

    def get_absolute_url(self) -> str:
        return reverse("dashboard:alerts") + f"#alert-{self.pk}"

    @property
    def slice_label(self) -> str:
        parts = [self.source_name, self.client_version, self.model]
        return " · ".join(part for part in parts if part) or "the whole fleet"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    def is_muted(self, now: Any) -> bool:
        return self.muted_until is not None and self.muted_until > now


class AlertNotification(models.Model):
    """One alert event to one destination; unique, claimed before it is sent."""

    class Event(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    class Channel(models.TextChoices):
        WEBHOOK = "webhook"
        EMAIL = "email"

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"
        SKIPPED = "skipped"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=10, choices=Event.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    target = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "event", "channel", "target"], name="alert_notification_once"
            )
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="alert_notification_due")]

    def __str__(self) -> str:
        return f"{self.event} of alert {self.alert_id} by {self.channel}: {self.status}"
