"""Usage summed per hour and per day, by source and model, so the overview's charts and totals over
weeks read a few thousand rows instead of every request.

Rows are derived data: :mod:`dashboard.fleet.rollups` recomputes the buckets a session touches
from its requests in the transaction that ingests it (and in the one that deletes it), and
``manage.py rollups_backfill`` rebuilds them all.
"""

from __future__ import annotations

from django.db import models

from dashboard.models.sessions import Source
from projections.hit_rate import hit_rate


class UsageRollup(models.Model):
    """The usage of one source's requests to one model from one client release whose start falls in
    one hour or one day (UTC)."""

    class Granularity(models.TextChoices):
        HOUR = "hour"
        DAY = "day"

    granularity = models.CharField(max_length=4, choices=Granularity.choices)
    bucket_start = models.DateTimeField()
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="usage_rollups")
    model = models.CharField(max_length=120, blank=True)
    client_version = models.CharField(max_length=60, blank=True)
    requests = models.PositiveIntegerField(default=0)
    cache_reported = models.PositiveIntegerField(
        default=0, help_text="Requests that reported a cache read or write figure (the hit rate needs one)."
    )
    read_reported = models.PositiveIntegerField(
        default=0, help_text="Requests that reported a cache read figure; with none, the read sum is unknown."
    )
    write_reported = models.PositiveIntegerField(
        default=0,
        help_text="Requests that reported a cache write figure; with none, the write sum is unknown.",
    )
    uncached_input_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_5m_tokens = models.BigIntegerField(default=0)
    cache_write_1h_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["granularity", "bucket_start", "source", "model", "client_version"],
                name="usage_rollup_unique_bucket",
            )
        ]
        indexes = [models.Index(fields=["granularity", "bucket_start"], name="usage_rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.granularity} {self.bucket_start:%Y-%m-%d %H:%M} {self.source_id} {self.model}"

    @property
    def hit_rate(self) -> float | None:
        """By the one rule of :func:`projections.hit_rate.hit_rate`; ``None`` when nothing reported."""
        if not self.cache_reported:
            return None
        return hit_rate(
            read=self.cache_read_tokens,
            uncached=self.uncached_input_tokens,
            writes=self.cache_write_5m_tokens + self.cache_write_1h_tokens,
        )
