"""A session's last activity is never null, so the list's default order can walk its index."""

import django.utils.timezone
from django.db import migrations, models
from django.db.models.functions import Coalesce


def fill_activity(apps, schema_editor):  # type: ignore[no-untyped-def]
    Session = apps.get_model("dashboard", "Session")
    Session.objects.filter(last_activity__isnull=True).update(
        last_activity=Coalesce("started_at", "created_at")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0005_api_tokens_prices"),
    ]

    operations = [
        migrations.RunPython(fill_activity, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="session",
            name="last_activity",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
    ]
