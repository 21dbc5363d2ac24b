from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone


class IngestJobQuerySet(models.QuerySet["IngestJob"]):
    def claim(self, *, job_id: int, owner: str, lease_seconds: int) -> bool:
        """Lease job ``job_id`` to ``owner`` for ``lease_seconds`` with one conditional UPDATE.

        Only a queued job, or a running one whose lease has run out (its worker died), can be taken;
        a live lease is never taken, whoever asks, even a second delivery of the same task. Taking
        a job over starts it again, so its progress restarts from zero (ingest is idempotent).
        """
        now = timezone.now()
        lapsed = Q(status=IngestJob.Status.RUNNING) & (Q(lease_until__lt=now) | Q(lease_until__isnull=True))
        claimed = self.filter(Q(status=IngestJob.Status.QUEUED) | lapsed, pk=job_id).update(
            status=IngestJob.Status.RUNNING,
            started_at=now,
            claimed_by=owner[:200],
            lease_until=now + timedelta(seconds=lease_seconds),
            bytes_done=0,
        )
        return bool(claimed)

    def renew(self, *, job_id: int, owner: str, lease_seconds: int) -> bool:
        """Extend ``owner``'s lease on a running job; ``False`` when the lease is no longer theirs."""
        until = timezone.now() + timedelta(seconds=lease_seconds)
        held = self.filter(pk=job_id, status=IngestJob.Status.RUNNING, claimed_by=owner[:200])
        return bool(held.update(lease_until=until))

    def release(self, *, job_id: int, owner: str) -> bool:
        """Give ``owner``'s running job back to the queue at once, so a retry of its task can claim it
        without waiting out the lease; ``False`` when the lease is no longer theirs."""
        held = self.filter(pk=job_id, status=IngestJob.Status.RUNNING, claimed_by=owner[:200])
        return bool(held.update(status=IngestJob.Status.QUEUED, claimed_by="", lease_until=None))

    def lapsed(self) -> IngestJobQuerySet:
        """Running jobs whose lease ran out: their worker stopped renewing it."""
        return self.filter(status=IngestJob.Status.RUNNING, lease_until__lt=timezone.now())


class IngestJob(models.Model):
    """One ingest of files (command line, upload or API), with its progress and per-line errors."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        NOT_QUEUED = "not_queued", "not queued"
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
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="The claim holds until then; the running worker keeps moving it on."
    )
    sessions = models.ManyToManyField(
        "dashboard.Session",
        blank=True,
        related_name="ingest_jobs",
        help_text="The sessions it added or updated.",
    )
    sessions_elsewhere = models.ManyToManyField(
        "dashboard.Session",
        blank=True,
        related_name="+",
        help_text="Sessions whose log it read but found stored under another source, and so did not store.",
    )

    bytes_total = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    sessions_added = models.PositiveIntegerField(default=0)
    sessions_updated = models.PositiveIntegerField(default=0)
    sessions_unchanged = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=0,
        help_text="Sessions read whose log was already stored whole; empty for a job recorded before "
        "they were counted.",
    )
    events_added = models.PositiveIntegerField(default=0)
    requests_added = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(
        default=0, help_text="Events and requests already stored, together."
    )
    duplicate_events = models.PositiveIntegerField(
        null=True, blank=True, default=0, help_text="Empty for a job recorded before they were counted apart."
    )
    duplicate_requests = models.PositiveIntegerField(
        null=True, blank=True, default=0, help_text="Empty for a job recorded before they were counted apart."
    )
    error_count = models.PositiveIntegerField(default=0)
    notice_count = models.PositiveIntegerField(
        default=0, help_text="Lines stored after characters no database holds were replaced; not errors."
    )
    message = models.TextField(blank=True)

    objects = IngestJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # The ingest page lists the newest jobs first; an API-fed fleet keeps tens of thousands.
        indexes = [models.Index(fields=["-created_at", "-id"], name="ingest_job_recent")]

    def __str__(self) -> str:
        return f"ingest #{self.pk} {self.status}"

    def get_absolute_url(self) -> str:
        return reverse("dashboard:ingest_job", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def status_summary(self) -> str:
        """The status in words, with the errors of a job done in spite of them: "Done, 3 errors"."""
        shown = str(self.get_status_display())
        if self.status == self.Status.DONE and self.error_count:
            return f"{shown}, {self.error_count:,} error{'' if self.error_count == 1 else 's'}"
        return shown

    @property
    def percent(self) -> int:
        if self.is_finished:
            return 100
        if not self.bytes_total:
            return 0
        return min(99, round(100 * self.bytes_done / self.bytes_total))


SAVED_FILE_KINDS = (IngestJob.Kind.UPLOAD, IngestJob.Kind.API)
"""Jobs whose input the web process saved under the data folder, where every worker reads it."""


class IngestLineNote(models.Model):
    """What an ingest says about one line: file, line, field and reason. Errors and notices differ
    only in what they mean, so they share these columns and their wording."""

    path = models.CharField(max_length=1000)
    line = models.PositiveIntegerField(null=True, blank=True)
    field = models.CharField(max_length=200)
    reason = models.TextField()

    class Meta:
        abstract = True
        ordering = ["job", "id"]

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.reason}"


class IngestError(IngestLineNote):
    """A bad line met during an ingest: file, line, field and reason."""

    job = models.ForeignKey(IngestJob, on_delete=models.CASCADE, related_name="errors")


class IngestNotice(IngestLineNote):
    """A line stored after a change that made it storable (a NUL or a lone surrogate replaced by
    U+FFFD): file, line, field and what was replaced. Listed beside the errors, never counted as one."""

    job = models.ForeignKey(IngestJob, on_delete=models.CASCADE, related_name="notices")
