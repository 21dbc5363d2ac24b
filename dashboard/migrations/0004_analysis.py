"""Cache analysis per request and the analysis job per session."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0002_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionAnalysis",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("done", "Done"),
                            ("failed", "Failed"),
                        ],
                        default="queued",
                        max_length=10,
                    ),
                ),
                ("claimed_by", models.CharField(blank=True, max_length=200)),
                ("requested_at", models.DateTimeField(blank=True, null=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("requests_total", models.PositiveIntegerField(default=0)),
                ("requests_done", models.PositiveIntegerField(default=0)),
                (
                    "unmatched_records",
                    models.PositiveIntegerField(
                        default=0, help_text="Client cache records whose requestRef names no stored request."
                    ),
                ),
                (
                    "message",
                    models.TextField(
                        blank=True, help_text="Why the last analysis failed; empty when it did not."
                    ),
                ),
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="analysis",
                        to="dashboard.session",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="RequestAnalysis",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "label",
                    models.CharField(
                        blank=True, help_text="The miss label; empty when nothing was missed.", max_length=120
                    ),
                ),
                ("material", models.BooleanField(default=False)),
                ("predicted_read", models.BigIntegerField(blank=True, null=True)),
                ("predicted_write", models.BigIntegerField(blank=True, null=True)),
                ("wire_allows", models.BigIntegerField(blank=True, null=True)),
                ("credited", models.BigIntegerField(blank=True, null=True)),
                (
                    "rewritten_tokens",
                    models.BigIntegerField(
                        default=0,
                        help_text="Reported cache writes of a prefix an earlier request of the lineage already wrote.",
                    ),
                ),
                ("data", models.JSONField(default=dict)),
                ("analysed_at", models.DateTimeField(auto_now=True)),
                (
                    "request",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="analysis",
                        to="dashboard.request",
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="request_analyses",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["session", "material"], name="analysis_session_material"),
                    models.Index(fields=["label"], name="analysis_label"),
                ],
            },
        ),
    ]
