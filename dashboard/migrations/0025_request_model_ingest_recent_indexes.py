from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0024_rollup_client_version_stated_miss_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="request",
            index=models.Index(fields=["model", "started_at"], name="request_model_started"),
        ),
        migrations.AddIndex(
            model_name="ingestjob",
            index=models.Index(fields=["-created_at", "-id"], name="ingest_job_recent"),
        ),
    ]
