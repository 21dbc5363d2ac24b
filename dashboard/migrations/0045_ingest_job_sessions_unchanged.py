"""An ingest job counts the sessions it read that were stored whole already, as ``manage.py ingest``
prints them. Jobs recorded before are left empty rather than guessed (as 0031 left their duplicates):
the column is added without a default, which Django supplies to the jobs created from now on.
"""

from django.db import migrations, models

HELP = "Sessions read whose log was already stored whole; empty for a job recorded before they were counted."


def unchanged(*, default: int | None) -> migrations.AddField:
    field = models.PositiveIntegerField(blank=True, null=True, default=default, help_text=HELP)
    return migrations.AddField(model_name="ingestjob", name="sessions_unchanged", field=field)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0044_session_cost"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[unchanged(default=None)],
            state_operations=[unchanged(default=0)],
        ),
    ]
