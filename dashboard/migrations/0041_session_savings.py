"""What each what-if scenario saves per session, kept so the savings pages rank without replaying."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0040_file_states"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScenarioSaving",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scenario", models.CharField(max_length=40)),
                ("model", models.CharField(max_length=200)),
                ("client_version", models.CharField(blank=True, max_length=60)),
                (
                    "cause",
                    models.CharField(
                        blank=True,
                        help_text="The recorded requests' miss label up to its position (prefix-changed@system, ttl-expired); empty where they did not miss.",
                        max_length=120,
                    ),
                ),
                ("requests", models.PositiveIntegerField()),
                (
                    "touched",
                    models.PositiveIntegerField(
                        help_text="Of those, the requests the scenario sends otherwise."
                    ),
                ),
                (
                    "recorded_cost",
                    models.DecimalField(
                        decimal_places=8,
                        help_text="These requests' cost as recorded, by the provider's rules.",
                        max_digits=16,
                    ),
                ),
                (
                    "cost",
                    models.DecimalField(
                        decimal_places=8, help_text="Their cost under the scenario.", max_digits=16
                    ),
                ),
                (
                    "saving",
                    models.DecimalField(
                        decimal_places=8,
                        help_text="recorded_cost - cost: what the scenario saves on them (negative: it costs more).",
                        max_digits=16,
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scenario_savings",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["scenario", "cause"], name="scenario_saving_cause_idx"),
                    models.Index(fields=["scenario", "model"], name="scenario_saving_model_idx"),
                    models.Index(fields=["scenario", "client_version"], name="scenario_saving_release_idx"),
                ],
            },
        ),
        migrations.CreateModel(
            name="SessionSavings",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "inputs_key",
                    models.CharField(
                        help_text="The engine's rules, the session's requests and the price table the figures were made from (savings.refresh.savings_inputs_key); another key means they are out of date.",
                        max_length=255,
                    ),
                ),
                ("computed_at", models.DateTimeField()),
                (
                    "error",
                    models.TextField(
                        blank=True,
                        help_text="Why there are no figures (a model without a price, no request); empty if none.",
                    ),
                ),
                (
                    "recorded_cost",
                    models.DecimalField(
                        blank=True,
                        decimal_places=8,
                        help_text="The session's cost as recorded, by the provider's rules.",
                        max_digits=16,
                        null=True,
                    ),
                ),
                (
                    "reported_cost",
                    models.DecimalField(
                        blank=True,
                        decimal_places=8,
                        help_text="The session's cost from the usage the provider reported.",
                        max_digits=16,
                        null=True,
                    ),
                ),
                (
                    "best_scenario",
                    models.CharField(
                        blank=True,
                        help_text="The scenarios the cheapest supported combination pulls, joined by +.",
                        max_length=200,
                    ),
                ),
                (
                    "best_saving",
                    models.DecimalField(
                        blank=True,
                        decimal_places=8,
                        help_text="What that combination saves; null when nothing is supported.",
                        max_digits=16,
                        null=True,
                    ),
                ),
                (
                    "results",
                    models.JSONField(
                        default=list,
                        help_text="One object per scenario, as manage.py whatif --json prints it (ScenarioResult.to_json).",
                    ),
                ),
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="savings",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["-best_saving"], name="savings_best_saving_idx")],
            },
        ),
    ]
