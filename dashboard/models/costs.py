from __future__ import annotations

from django.db import models

from dashboard.models.sessions import Session


class SessionCostLedger(models.Model):
    """A session's cost before any price (:class:`~dashboard.services.cost_ledger.ModelTally` by model),
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
