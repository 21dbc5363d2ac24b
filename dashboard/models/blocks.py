from __future__ import annotations

from django.db import models


class Block(models.Model):
    """A content-addressed unit of a rendered request, stored once however often it is sent.

    Two hundred turns of one conversation re-send the same tools, system prompt and history; each
    distinct unit is one row, and requests refer to it by hash.
    """

    hash = models.CharField(max_length=32, primary_key=True)
    kind = models.CharField(max_length=40)
    canonical = models.TextField(help_text="Stable JSON of the unit without cache_control.")
    chars = models.PositiveIntegerField()
    tokens = models.PositiveIntegerField(help_text="Heuristic estimate (characters / 4).")

    def __str__(self) -> str:
        return f"{self.kind}:{self.hash}"
