"""Projection rows, re-fold runs and their results, and checks of a host's own rows (DESIGN §5)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from dashboard.models.sessions import Session


class ProjectionRow(models.Model):
    """The state of projection ``key`` under state version ``ver`` after event ``seq`` of a session.

    A shortcut, never authority: a row of another version than the live one is discarded and the
    log folded again. ``seq`` is null when the fold stopped at the first event; ``error`` then says
    why, and the row stays at its last good seq until the log or the version changes.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="projection_rows")
    key = models.CharField(max_length=80)
    ver = models.PositiveIntegerField()
    seq = models.IntegerField(null=True, blank=True, help_text="The last event folded into val.")
    val = models.JSONField(help_text="The serialized state after seq.")
    view = models.JSONField(null=True, blank=True, help_text="The view of that state, as pages show it.")
    state_bytes = models.PositiveIntegerField(default=0, help_text="Bytes of val as compact JSON.")
    error = models.TextField(
        blank=True, help_text="Why the fold stopped after seq; empty when it reached the end."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key", "ver"], name="projection_row_once_per_version"),
        ]
        indexes = [models.Index(fields=["key", "ver"], name="projection_row_key_ver")]
        ordering = ["session", "key", "ver"]

    def __str__(self) -> str:
        return f"{self.key} v{self.ver} @ {self.session_id}#{self.seq}"


class ProjectionTally(models.Model):
    """A change to the stored projection rows of one key and state version: the rows, retained state
    bytes and stopped folds it added (negative when it removed them) and when it wrote one.

    Written by database triggers on :class:`ProjectionRow` (migration 0026), so every writer keeps
    it — the fold, a re-fold, a session's deletion, a bulk load — and none takes a lock for it: a
    change appends a row rather than updating a shared one. The projections page sums the few rows
    per key and version, and merges them when they pile up
    (:func:`dashboard.refold.tally.projection_tallies`).
    """

    key = models.CharField(max_length=80)
    ver = models.PositiveIntegerField()
    rows = models.BigIntegerField(default=0)
    state_bytes = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0, help_text="Rows whose fold stopped (a non-empty error).")
    last_fold = models.DateTimeField(
        null=True, blank=True, help_text="The latest write of a row it counts; null for a removal."
    )

    def __str__(self) -> str:
        return f"{self.key} v{self.ver} {self.rows:+d} rows"


class FoldRunQuerySet(models.QuerySet["FoldRun"]):
    def unfinished(self) -> FoldRunQuerySet:
        return self.filter(status__in=(FoldRun.Status.QUEUED, FoldRun.Status.RUNNING))

    def resumable(self) -> FoldRunQuerySet:
        """Runs an operator may resume: any but a done one (a failed run keeps its results so far)."""
        return self.exclude(status=FoldRun.Status.DONE)


class FoldRun(models.Model):
    """A re-fold of stored logs under two state versions of one key, compared event by event (DESIGN §5.2)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        NOT_QUEUED = "not_queued", "not queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    key = models.CharField(max_length=80)
    from_version = models.PositiveIntegerField()
    to_version = models.PositiveIntegerField()
    session_ids = models.JSONField(
        null=True, blank=True, help_text="Session primary keys to re-fold; null means every session."
    )
    last_session_id = models.BigIntegerField(
        null=True, blank=True, help_text="For every session: the newest session when the run started."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    claimed_by = models.CharField(max_length=200, blank=True)
    message = models.TextField(blank=True)

    sessions_total = models.PositiveIntegerField(default=0)
    sessions_done = models.PositiveIntegerField(default=0)
    events = models.BigIntegerField(default=0)
    identical = models.PositiveIntegerField(default=0)
    diverged = models.PositiveIntegerField(default=0)
    errored = models.PositiveIntegerField(default=0)
    from_state_bytes = models.BigIntegerField(default=0, help_text="Retained state under from_version.")
    to_state_bytes = models.BigIntegerField(default=0, help_text="Retained state under to_version.")
    fold_seconds = models.FloatField(default=0.0, help_text="Time spent folding, summed over sessions.")

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker last finished a session."
    )
    lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The run's claim holds until then; each finished session moves it on.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = FoldRunQuerySet.as_manager()

    UNFINISHED = ("queued", "running", "not_queued")
    """A run that has work left: queued, running, or waiting for an operator's resume."""

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A double-click on "Re-fold" started two identical runs that both did the whole work.
            # One unfinished run of a comparison over every session; one over chosen sessions is free.
            models.UniqueConstraint(
                fields=["key", "from_version", "to_version"],
                condition=Q(status__in=("queued", "running", "not_queued"), session_ids__isnull=True),
                name="fold_run_one_unfinished_fleet_run",
            ),
        ]

    def __str__(self) -> str:
        return f"re-fold #{self.pk} {self.key} v{self.from_version}→v{self.to_version} {self.status}"

    def get_absolute_url(self) -> str:
        return reverse("dashboard:fold_run", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        if not self.sessions_total:
            return 0
        return min(99, 100 * self.sessions_done // self.sessions_total)

    @property
    def wall_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or self.heartbeat_at
        return None if end is None else (end - self.started_at).total_seconds()


class FoldRunResult(models.Model):
    """What a fold run found for one session; written in the same transaction as the session's new rows."""

    class Status(models.TextChoices):
        IDENTICAL = "identical"
        DIVERGED = "diverged"
        ERROR = "error"

    run = models.ForeignKey(FoldRun, on_delete=models.CASCADE, related_name="results")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="fold_results")
    status = models.CharField(max_length=10, choices=Status.choices)
    events = models.PositiveIntegerField(default=0)
    divergent_seq = models.IntegerField(null=True, blank=True)
    divergent_type = models.CharField(max_length=80, blank=True)
    from_view = models.JSONField(null=True, blank=True)
    to_view = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    from_state_bytes = models.PositiveIntegerField(default=0)
    to_state_bytes = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "session"], name="fold_result_once_per_session"),
        ]
        # The run page lists its few divergences and errors: read off these, not every result of the run.
        indexes = [
            models.Index(
                fields=["run", "session"],
                condition=models.Q(divergent_seq__isnull=False),
                name="fold_result_diverged",
            ),
            models.Index(
                fields=["run", "session"], condition=models.Q(status="error"), name="fold_result_errored"
            ),
        ]
        ordering = ["run", "session"]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.session_id} {self.status}"


class ProjcacheCheck(models.Model):
    """A host's own projection row (``session_projcache.json``) compared with our fold at the same seq."""

    class Status(models.TextChoices):
        AGREE = "agree"
        MISMATCH = "mismatch"
        NOT_COMPARABLE = "not-comparable"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="projcache_checks")
    key = models.CharField(max_length=80)
    ver = models.PositiveIntegerField()
    seq = models.IntegerField()
    status = models.CharField(max_length=20, choices=Status.choices)
    theirs = models.JSONField(null=True, blank=True)
    ours = models.JSONField(null=True, blank=True)
    detail = models.TextField(blank=True)
    source_path = models.CharField(max_length=1000, blank=True)
    checked_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "key", "ver"], name="projcache_check_once_per_version"
            ),
        ]
        ordering = ["session", "key", "ver"]

    def __str__(self) -> str:
        return f"projcache {self.key} v{self.ver} @ {self.session_id}#{self.seq}: {self.status}"
