from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone


class IngestJobQuerySet(models.QuerySet["IngestJob"]):
    def claim(self, *, job_id: int, owner: str) -> bool:
        """Take job ``job_id`` for ``owner`` with one conditional UPDATE; ``False`` when it is not free.

        A queued job is free, and so is a running one ``owner`` already holds: the same task
        delivered again after its worker died. That redelivery starts the job over, so its progress
        restarts from zero. A job another owner holds, or a finished one, is left alone.
        """
        claimable = Q(status=IngestJob.Status.QUEUED) | Q(status=IngestJob.Status.RUNNING, claimed_by=owner)
        claimed = self.filter(claimable, pk=job_id).update(
            status=IngestJob.Status.RUNNING, started_at=timezone.now(), claimed_by=owner[:200], bytes_done=0
        )
        return bool(claimed)


class IngestJob(models.Model):
    """One ingest of files (command line, upload or API), with its progress and per-line errors."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Kind(models.TextChoices):
        COMMAND = "command"
        UPLOAD = "upload"
        API = "api"

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.COMMAND)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    label = models.CharField(max_length=500, blank=True, help_text="What was ingested: paths or file names.")
    source_name = models.CharField(max_length=100, blank=True)
    format = models.CharField(max_length=40, blank=True, help_text="Forced format; empty means detected.")
    paths = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)

    bytes_total = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    sessions_added = models.PositiveIntegerField(default=0)
    sessions_updated = models.PositiveIntegerField(default=0)
    events_added = models.PositiveIntegerField(default=0)
    requests_added = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    notice_count = models.PositiveIntegerField(
        default=0, help_text="Lines stored after characters no database holds were replaced; not errors."
    )
    message = models.TextField(blank=True)

    objects = IngestJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"ingest #{self.pk} {self.status}"

    def get_absolute_url(self) -> str:
        return reverse("dashboard:ingest_job", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        if self.is_finished:
            return 100
        if not self.bytes_total:
            return 0
        return min(99, round(100 * self.bytes_done / self.bytes_total))


class IngestError(models.Model):
    """A bad line met during an ingest: file, line, field and reason."""

    job = models.ForeignKey(IngestJob, on_delete=models.CASCADE, related_name="errors")
    path = models.CharField(max_length=1000)
    line = models.PositiveIntegerField(null=True, blank=True)
    field = models.CharField(max_length=200)
    reason = models.TextField()

    class Meta:
        ordering = ["job", "id"]

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.reason}"


class IngestNotice(models.Model):
    """A line stored after a change that made it storable (a NUL or a lone surrogate replaced by
    U+FFFD): file, line, field and what was replaced. Listed beside the errors, never counted as one."""

    job = models.ForeignKey(IngestJob, on_delete=models.CASCADE, related_name="notices")
    path = models.CharField(max_length=1000)
    line = models.PositiveIntegerField(null=True, blank=True)
    field = models.CharField(max_length=200)
    reason = models.TextField()

    class Meta:
        ordering = ["job", "id"]

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.reason}"
