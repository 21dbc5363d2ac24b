from __future__ import annotations

from django.db import models


class Source(models.Model):
    """One agent host or deployment that sends logs to this dashboard."""

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=40, blank=True, help_text="What runs there, e.g. claude-code or dsh.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
