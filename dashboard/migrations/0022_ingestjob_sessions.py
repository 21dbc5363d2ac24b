from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0021_host_notes_warning_stakes"),
    ]

    operations = [
        migrations.AddField(
            model_name="ingestjob",
            name="sessions",
            field=models.ManyToManyField(
                blank=True,
                help_text="The sessions it added or updated.",
                related_name="ingest_jobs",
                to="dashboard.session",
            ),
        ),
    ]
