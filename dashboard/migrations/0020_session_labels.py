from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0019_usage_rollup"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="labels",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Who or what the session belongs to, as its source named them (user.email, ...).",
            ),
        ),
    ]
