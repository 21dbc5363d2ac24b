"""One unfinished re-fold of a comparison over every session: a double-click started two.

Runs a database made before may already hold twice are settled first: the oldest stays, each later
one is marked failed, naming it, so the constraint can be added and no run's results are lost.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.utils import timezone

UNFINISHED = ("queued", "running", "not_queued")


def fail_later_duplicates(apps: Any, schema_editor: Any) -> None:
    fold_run = apps.get_model("dashboard", "FoldRun")
    kept: dict[tuple[str, int, int], int] = {}
    unfinished = fold_run.objects.filter(status__in=UNFINISHED, session_ids__isnull=True).order_by("pk")
    for run in unfinished.only("pk", "key", "from_version", "to_version"):
        comparison = (run.key, run.from_version, run.to_version)
        if comparison not in kept:
            kept[comparison] = run.pk
            continue
        fold_run.objects.filter(pk=run.pk).update(
            status="failed",
            finished_at=timezone.now(),
            claimed_by="",
            lease_until=None,
            message=f"Superseded by re-fold #{kept[comparison]} of the same comparison, which carries on.",
        )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0038_request_endpoint"),
    ]

    operations = [
        migrations.RunPython(fail_later_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="foldrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(("session_ids__isnull", True), ("status__in", UNFINISHED)),
                fields=("key", "from_version", "to_version"),
                name="fold_run_one_unfinished_fleet_run",
            ),
        ),
    ]
