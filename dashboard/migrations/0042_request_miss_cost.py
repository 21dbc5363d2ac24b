"""Each analysed request's miss cost, kept beside its cost so pages sum what misses cost without
replaying; ``manage.py refresh_request_figures`` figures it for requests analysed before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0041_session_savings"),
    ]

    operations = [
        migrations.AddField(
            model_name="requestanalysis",
            name="miss_cost",
            field=models.DecimalField(
                blank=True,
                decimal_places=8,
                help_text="What it paid beyond the read price for tokens the previous request of its lineage had cached (projections.money.miss_cost); 0 for a hit or a cold start, null when unpriced.",
                max_digits=18,
                null=True,
            ),
        ),
    ]
