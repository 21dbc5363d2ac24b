from __future__ import annotations

from django.db import models

from dashboard.models.requests import Request
from dashboard.models.sessions import Session


class SessionAnalysis(models.Model):
    """The cache analysis job of one session: queued after each ingest, claimed by one worker."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="analysis")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="The claim holds until then; the running worker keeps moving it on."
    )
    requested_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    requests_total = models.PositiveIntegerField(default=0)
    requests_done = models.PositiveIntegerField(default=0)
    unmatched_records = models.PositiveIntegerField(
        default=0, help_text="Client cache records whose requestRef names no stored request."
    )
    message = models.TextField(blank=True, help_text="Why the last analysis failed; empty when it did not.")
    generation = models.PositiveIntegerField(
        default=0, help_text="How many times the analysis was asked for: once per ingest of the session."
    )
    stored_generation = models.PositiveIntegerField(
        default=0,
        help_text="The generation the stored results were read at: a run stores only a reading at least "
        "this recent, so results never go back in time and a run overtaken by a newer ingest still lands.",
    )

    def __str__(self) -> str:
        return f"analysis of {self.session_id}: {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class RequestAnalysisQuerySet(models.QuerySet["RequestAnalysis"]):
    def material_misses(self) -> RequestAnalysisQuerySet:
        return self.filter(material=True)


class RequestAnalysis(models.Model):
    """What the cache engine derived for one request (DESIGN §6.2), with the figures pages filter on.

    ``data`` holds the whole analysis as JSON: the previous request's markers with their status, the
    first change with its cause and remedy, the figures side by side, the miss label, cacheability
    per tier and this request's own render record. The columns repeat what lists and charts query.
    """

    request = models.OneToOneField(Request, on_delete=models.CASCADE, related_name="analysis")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="request_analyses")
    label = models.CharField(
        max_length=120, blank=True, help_text="The miss label; empty when nothing was missed."
    )
    material = models.BooleanField(default=False)
    predicted_read = models.BigIntegerField(null=True, blank=True)
    predicted_write = models.BigIntegerField(null=True, blank=True)
    wire_allows = models.BigIntegerField(null=True, blank=True)
    credited = models.BigIntegerField(null=True, blank=True)
    rewritten_tokens = models.BigIntegerField(
        default=0,
        help_text="Cache writes of tokens the previous request of the lineage had cached (the session "
        "cost's re-written tokens, request by request); figured with wasted_tokens.",
    )
    cause = models.CharField(
        max_length=40,
        blank=True,
        help_text="The cause of the first change from the previous request; empty when nothing changed.",
    )
    wasted_tokens = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="Tokens the previous request of the lineage left cached that this one processed again; "
        "null until figured (see dashboard.analysis.request_figures).",
    )
    cost = models.DecimalField(
        max_digits=18,
        decimal_places=8,
        null=True,
        blank=True,
        help_text="What the request's reported usage cost in USD; null when no price matches its model.",
    )
    miss_cost = models.DecimalField(
        max_digits=18,
        decimal_places=8,
        null=True,
        blank=True,
        help_text="What it paid beyond the read price for tokens the previous request of its lineage had "
        "cached (projections.money.miss_cost); 0 for a hit or a cold start, null when unpriced.",
    )
    data = models.JSONField(default=dict)
    analysed_at = models.DateTimeField(auto_now=True)

    objects = RequestAnalysisQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["session", "material"], name="analysis_session_material"),
            models.Index(fields=["label"], name="analysis_label"),
            models.Index(fields=["cause"], name="analysis_cause"),
            # The requests list filters by these and reads its pages sorted by them off the index,
            # the request breaking ties (dashboard.requests.listing).
            models.Index(fields=["wasted_tokens", "request"], name="analysis_wasted_request"),
            models.Index(fields=["cost", "request"], name="analysis_cost_request"),
            # The inbox lists the costliest misses first, read off this index.
            models.Index(fields=["miss_cost", "request"], name="analysis_miss_cost_request"),
        ]

    def __str__(self) -> str:
        return f"analysis of request {self.request_id}: {self.label or 'no miss'}"
