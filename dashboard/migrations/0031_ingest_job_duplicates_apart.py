"""An ingest job counts the events and the requests it found already stored apart, beside their total.

Jobs recorded before keep only the total: their two counts are left empty rather than guessed. A job
created from now on starts both at zero, a default Django supplies, so the columns are added without
one and the jobs already recorded get none.
"""

from django.db import migrations, models

HELP = "Empty for a job recorded before they were counted apart."


def counted_apart(name: str, *, default: int | None) -> migrations.AddField:
    field = models.PositiveIntegerField(blank=True, null=True, default=default, help_text=HELP)
    return migrations.AddField(model_name="ingestjob", name=name, field=field)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0030_rewritten_by_the_cost_rule"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ingestjob",
            name="duplicates",
            field=models.PositiveIntegerField(
                default=0, help_text="Events and requests already stored, together."
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                counted_apart("duplicate_events", default=None),
                counted_apart("duplicate_requests", default=None),
            ],
            state_operations=[
                counted_apart("duplicate_events", default=0),
                counted_apart("duplicate_requests", default=0),
            ],
        ),
    ]
