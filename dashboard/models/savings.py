from __future__ import annotations

from django.db import models

from dashboard.models.sessions import Session


def _usd(help_text: str, *, null: bool = False) -> models.DecimalField:  # type: ignore[type-arg]
    return models.DecimalField(max_digits=16, decimal_places=8, null=null, blank=null, help_text=help_text)


class SessionSavings(models.Model):
    """What each what-if scenario comes to for one session (``manage.py whatif``'s list, kept), so
    a page ranks sessions by what a fix would save without replaying any (DESIGN §6.4).

    Made by :func:`dashboard.savings.refresh.session_savings_refresh` after each analysis, for the
    requests and prices named by ``inputs_key``; another key means the figures are out of date.
    """

    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="savings")
    inputs_key = models.CharField(
        max_length=255,
        help_text="The engine's rules, the session's requests and the price table the figures were made "
        "from (savings.refresh.savings_inputs_key); another key means they are out of date.",
    )
    computed_at = models.DateTimeField()
    error = models.TextField(
        blank=True, help_text="Why there are no figures (a model without a price, no request); empty if none."
    )
    recorded_cost = _usd("The session's cost as recorded, by the provider's rules.", null=True)
    reported_cost = _usd("The session's cost from the usage the provider reported.", null=True)
    best_scenario = models.CharField(
        max_length=200,
        blank=True,
        help_text="The scenarios the cheapest supported combination pulls, joined by +.",
    )
    best_saving = _usd("What that combination saves; null when nothing is supported.", null=True)
    results = models.JSONField(
        default=list,
        help_text="One object per scenario, as manage.py whatif --json prints it (ScenarioResult.to_json).",
    )
    request_tokens = models.JSONField(
        default=dict,
        help_text="Each request's usage by scenario (WhatIf.request_tokens): every request as recorded, "
        "under another scenario only those it changes; for the request page.",
    )

    class Meta:
        indexes = [
            models.Index(fields=["-best_saving"], name="savings_best_saving_idx"),
            # The savings page's cache key: the newest figures made.
            models.Index(fields=["computed_at"], name="savings_computed_at_idx"),
        ]

    def __str__(self) -> str:
        return f"what-if of session {self.session_id}"


class ScenarioSaving(models.Model):
    """One supported scenario's figures for a group of a session's requests: those of one model,
    one client release and one recorded miss cause. Summing these ranks sources (through the
    session), releases, models and causes by what a fix would save."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="scenario_savings")
    scenario = models.CharField(max_length=40)
    model = models.CharField(max_length=200)
    client_version = models.CharField(max_length=60, blank=True)
    cause = models.CharField(
        max_length=120,
        blank=True,
        help_text="The recorded requests' miss label up to its position (prefix-changed@system, "
        "ttl-expired); empty where they did not miss.",
    )
    requests = models.PositiveIntegerField()
    touched = models.PositiveIntegerField(help_text="Of those, the requests the scenario sends otherwise.")
    recorded_cost = _usd("These requests' cost as recorded, by the provider's rules.")
    cost = _usd("Their cost under the scenario.")
    saving = _usd("recorded_cost - cost: what the scenario saves on them (negative: it costs more).")

    class Meta:
        indexes = [
            models.Index(fields=["scenario", "cause"], name="scenario_saving_cause_idx"),
            models.Index(fields=["scenario", "model"], name="scenario_saving_model_idx"),
            models.Index(fields=["scenario", "client_version"], name="scenario_saving_release_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.scenario} on session {self.session_id}: {self.model} {self.cause or 'no miss'}"
