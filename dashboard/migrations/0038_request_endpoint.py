"""Keep the host each request was sent to: endpoints differ in what their cache keys on (Claude
Code's attribution block busts a prefix cache on some, and is ignored by others)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0037_alerts"),
    ]

    operations = [
        migrations.AddField(
            model_name="request",
            name="endpoint",
            field=models.CharField(
                blank=True,
                help_text="The host the call was sent to, when the source logged its URL (a gateway, a server).",
                max_length=200,
            ),
        ),
    ]
