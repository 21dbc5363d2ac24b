"""An ingest job keeps the sessions whose log it read but found stored under another source, for its
page to say where each is and offer an admin to move it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0046_message_text_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="ingestjob",
            name="sessions_elsewhere",
            field=models.ManyToManyField(
                blank=True,
                help_text="Sessions whose log it read but found stored under another source, and so did not store.",
                related_name="+",
                to="dashboard.session",
            ),
        ),
    ]
