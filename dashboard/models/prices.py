from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models


def _per_million(help_text: str) -> models.DecimalField:  # type: ignore[type-arg]
    return models.DecimalField(
        max_digits=12, decimal_places=6, validators=[MinValueValidator(0)], help_text=help_text
    )


class ModelPrice(models.Model):
    """What a model's tokens cost, in USD per million tokens, and where that figure was read.

    ``pattern`` names a model or a family: it matches a model name equal to it or continuing with a
    separator (``claude-sonnet-4`` matches ``claude-sonnet-4-20250514`` but not ``claude-sonnet-45``);
    ``*`` stands for any run of characters. The longest matching pattern wins.
    """

    pattern = models.CharField(max_length=120, unique=True)
    provider = models.CharField(max_length=40, blank=True)
    input = _per_million("Uncached input tokens.")
    output = _per_million("Output tokens, reasoning included.")
    cache_write_5m = _per_million("Cache writes with the default (5-minute) lifetime.")
    cache_write_1h = _per_million("Cache writes with the 1-hour lifetime.")
    cache_read = _per_million("Cache reads (hits).")
    source_url = models.URLField(max_length=500, blank=True, help_text="The page the price was read from.")
    read_on = models.DateField(help_text="The day the price was read from that page.")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider", "pattern"]

    def __str__(self) -> str:
        return self.pattern
