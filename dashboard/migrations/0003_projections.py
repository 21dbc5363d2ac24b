"""Projection rows, re-fold runs with their per-session results, and projection-cache checks."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0004_analysis"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="FoldRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=80)),
                ("from_version", models.PositiveIntegerField()),
                ("to_version", models.PositiveIntegerField()),
                (
                    "session_ids",
                    models.JSONField(
                        blank=True,
                        help_text="Session primary keys to re-fold; null means every session.",
                        null=True,
                    ),
                ),
                (
                    "last_session_id",
                    models.BigIntegerField(
                        blank=True,
                        help_text="For every session: the newest session when the run started.",
                        null=True,
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
                ("message", models.TextField(blank=True)),
                ("sessions_total", models.PositiveIntegerField(default=0)),
                ("sessions_done", models.PositiveIntegerField(default=0)),
                ("events", models.BigIntegerField(default=0)),
                ("identical", models.PositiveIntegerField(default=0)),
                ("diverged", models.PositiveIntegerField(default=0)),
                ("errored", models.PositiveIntegerField(default=0)),
                (
                    "from_state_bytes",
                    models.BigIntegerField(default=0, help_text="Retained state under from_version."),
                ),
                (
                    "to_state_bytes",
                    models.BigIntegerField(default=0, help_text="Retained state under to_version."),
                ),
                (
                    "fold_seconds",
                    models.FloatField(default=0.0, help_text="Time spent folding, summed over sessions."),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                (
                    "heartbeat_at",
                    models.DateTimeField(
                        blank=True, help_text="When a worker last finished a session.", null=True
                    ),
                ),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="FoldRunResult",
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
                        choices=[("identical", "Identical"), ("diverged", "Diverged"), ("error", "Error")],
                        max_length=10,
                    ),
                ),
                ("events", models.PositiveIntegerField(default=0)),
                ("divergent_seq", models.IntegerField(blank=True, null=True)),
                ("divergent_type", models.CharField(blank=True, max_length=80)),
                ("from_view", models.JSONField(blank=True, null=True)),
                ("to_view", models.JSONField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("from_state_bytes", models.PositiveIntegerField(default=0)),
                ("to_state_bytes", models.PositiveIntegerField(default=0)),
                ("seconds", models.FloatField(default=0.0)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to="dashboard.foldrun",
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="fold_results",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "ordering": ["run", "session"],
                "constraints": [
                    models.UniqueConstraint(fields=("run", "session"), name="fold_result_once_per_session")
                ],
            },
        ),
        migrations.CreateModel(
            name="ProjcacheCheck",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=80)),
                ("ver", models.PositiveIntegerField()),
                ("seq", models.IntegerField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("agree", "Agree"),
                            ("mismatch", "Mismatch"),
                            ("not-comparable", "Not Comparable"),
                        ],
                        max_length=20,
                    ),
                ),
                ("theirs", models.JSONField(blank=True, null=True)),
                ("ours", models.JSONField(blank=True, null=True)),
                ("detail", models.TextField(blank=True)),
                ("source_path", models.CharField(blank=True, max_length=1000)),
                ("checked_at", models.DateTimeField(auto_now=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="projcache_checks",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "ordering": ["session", "key", "ver"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "key", "ver"), name="projcache_check_once_per_version"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ProjectionRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=80)),
                ("ver", models.PositiveIntegerField()),
                (
                    "seq",
                    models.IntegerField(blank=True, help_text="The last event folded into val.", null=True),
                ),
                ("val", models.JSONField(help_text="The serialized state after seq.")),
                (
                    "view",
                    models.JSONField(
                        blank=True, help_text="The view of that state, as pages show it.", null=True
                    ),
                ),
                (
                    "state_bytes",
                    models.PositiveIntegerField(default=0, help_text="Bytes of val as compact JSON."),
                ),
                (
                    "error",
                    models.TextField(
                        blank=True, help_text="Why the fold stopped after seq; empty when it reached the end."
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="projection_rows",
                        to="dashboard.session",
                    ),
                ),
            ],
            options={
                "ordering": ["session", "key", "ver"],
                "indexes": [models.Index(fields=["key", "ver"], name="projection_row_key_ver")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "key", "ver"), name="projection_row_once_per_version"
                    )
                ],
            },
        ),
    ]
