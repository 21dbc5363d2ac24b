"""A price-free cost ledger per session: the overview's wasted-writes panel and the session page price
a session from it instead of from every request, and keep it across restarts and price changes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0028_fold_result_listed_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionCostLedger",
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
                        help_text="The ledger's format and the session's requests and stored analysis when it was made (services.session_costs.session_inputs_key); another key means it is out of date.",
                        max_length=255,
                    ),
                ),
                (
                    "tallies",
                    models.JSONField(
                        help_text="Model name → its tally (services.cost_ledger.ModelTally), a list of token counts."
                    ),
                ),
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cost_ledger",
                        to="dashboard.session",
                    ),
                ),
            ],
        ),
    ]
