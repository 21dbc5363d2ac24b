"""What money is made of: the price table (per model, dated) and each session's cost ledger."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from dashboard.models.sessions import Session


class SessionCostLedger(models.Model):
    """A session's cost before any price (:class:`~dashboard.costs.ledger.ModelTally` by model),
    kept for the requests and analysis it was made from, so a page prices a session from a few sums
    instead of every request, and a price change costs no more than a new multiplication."""

    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="cost_ledger")
    inputs_key = models.CharField(
        max_length=255,
        help_text="The ledger's format and the session's requests and stored analysis when it was made "
        "(services.session_costs.session_inputs_key); another key means it is out of date.",
    )
    tallies = models.JSONField(
        help_text="Model name → its tally (services.cost_ledger.ModelTally), a list of token counts."
    )

    def __str__(self) -> str:
        return f"cost ledger of session {self.session_id}"


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
