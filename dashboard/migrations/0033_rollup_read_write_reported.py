"""Each usage rollup counts the requests that reported a cache read and those that reported a cache
write, so the overview shows a range's read or write sum as unknown where no request reported it
(an all-DeepSeek range read "Cache read 0 · Cache write 0"), not as 0.

The counts of the rows already stored are made again from the requests, as the service makes them.
"""

from collections import defaultdict
from datetime import UTC

from django.db import migrations, models
from django.db.models import Count, Q
from django.db.models.functions import TruncHour

COUNTS = ("read_reported", "write_reported")


def count_reported(apps, schema_editor):  # type: ignore[no-untyped-def]
    Request = apps.get_model("dashboard", "Request")
    UsageRollup = apps.get_model("dashboard", "UsageRollup")
    rows = (
        Request.objects.filter(started_at__isnull=False)
        .annotate(hour=TruncHour("started_at", tzinfo=UTC))
        .values("hour", "session__source_id", "model", "client_version")
        .annotate(
            read_reported=Count("id", filter=Q(cache_read_tokens__isnull=False)),
            write_reported=Count(
                "id", filter=Q(cache_write_5m_tokens__isnull=False) | Q(cache_write_1h_tokens__isnull=False)
            ),
        )
        .filter(Q(read_reported__gt=0) | Q(write_reported__gt=0))
        .order_by()
    )
    counted: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows.iterator():
        hour = row["hour"].astimezone(UTC)
        figures = (row["read_reported"], row["write_reported"])
        for key in (
            ("hour", hour, row["session__source_id"], row["model"], row["client_version"]),
            ("day", hour.replace(hour=0), row["session__source_id"], row["model"], row["client_version"]),
        ):
            counted[key][0] += figures[0]
            counted[key][1] += figures[1]
    changed = []
    for rollup in UsageRollup.objects.filter(cache_reported__gt=0).iterator():
        key = (
            rollup.granularity,
            rollup.bucket_start.astimezone(UTC),
            rollup.source_id,
            rollup.model,
            rollup.client_version,
        )
        rollup.read_reported, rollup.write_reported = counted.get(key, (0, 0))
        changed.append(rollup)
    UsageRollup.objects.bulk_update(changed, COUNTS, batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0032_session_cache_figures_unreported"),
    ]

    operations = [
        migrations.AddField(
            model_name="usagerollup",
            name="read_reported",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Requests that reported a cache read figure; with none, the read sum is unknown.",
            ),
        ),
        migrations.AddField(
            model_name="usagerollup",
            name="write_reported",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Requests that reported a cache write figure; with none, the write sum is unknown.",
            ),
        ),
        migrations.RunPython(count_reported, migrations.RunPython.noop),
    ]
