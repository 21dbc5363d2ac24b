"""A session's cache read and cache write sums are null when none of its requests reported them.

They were stored as 0, so a DeepSeek session (no cache figure at all) and an OpenAI one (reads but
no writes) read "Cache write 0" where the provider had said nothing. The sums of the sessions
already stored are nulled where no request of theirs reported the bucket; the rest are already
right. Reversing stores 0 again, as the columns then require.

The list sorts these columns as COALESCE(column, -1) (listing._NULL_AS), so their sort indexes of
0007 are made again on that expression. On SQLite, altering a column rebuilds the table, which drops
every index made outside the model state; the other sort indexes of 0007 are made again with them.
"""

from django.db import migrations, models
from django.db.models import Q

PLAIN_SORTS = (
    ("session_sort_events", "event_count"),
    ("session_sort_requests", "request_count"),
    ("session_sort_uncached", "uncached_input_tokens"),
    ("session_sort_output", "output_tokens"),
    ("session_sort_warnings", "warning_count"),
    ("session_sort_hit_rate", "(COALESCE(hit_rate, -1.0))"),
)
NULLABLE_SORTS = (
    ("session_sort_read", "(COALESCE(cache_read_tokens, -1))"),
    ("session_sort_write", "(COALESCE(cache_write_tokens, -1))"),
)
OLD_SORTS = (
    ("session_sort_read", "cache_read_tokens"),
    ("session_sort_write", "cache_write_tokens"),
)


def _create(schema_editor, indexes) -> None:  # type: ignore[no-untyped-def]
    for name, key in indexes:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON dashboard_session ({key}, id)")


def _drop(schema_editor, indexes) -> None:  # type: ignore[no-untyped-def]
    for name, _ in indexes:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def sort_on_unreported_as_lowest(apps, schema_editor):  # type: ignore[no-untyped-def]
    _drop(schema_editor, OLD_SORTS)
    _create(schema_editor, PLAIN_SORTS + NULLABLE_SORTS)


def sort_on_plain_columns(apps, schema_editor):  # type: ignore[no-untyped-def]
    _drop(schema_editor, NULLABLE_SORTS)
    _create(schema_editor, PLAIN_SORTS + OLD_SORTS)


def unreported_sums_as_null(apps, schema_editor):  # type: ignore[no-untyped-def]
    Request = apps.get_model("dashboard", "Request")
    Session = apps.get_model("dashboard", "Session")
    read = Request.objects.filter(cache_read_tokens__isnull=False).values("session_id")
    written = Request.objects.filter(
        Q(cache_write_5m_tokens__isnull=False) | Q(cache_write_1h_tokens__isnull=False)
    ).values("session_id")
    Session.objects.exclude(pk__in=read).update(cache_read_tokens=None)
    Session.objects.exclude(pk__in=written).update(cache_write_tokens=None)


def unreported_sums_as_zero(apps, schema_editor):  # type: ignore[no-untyped-def]
    Session = apps.get_model("dashboard", "Session")
    Session.objects.filter(cache_read_tokens__isnull=True).update(cache_read_tokens=0)
    Session.objects.filter(cache_write_tokens__isnull=True).update(cache_write_tokens=0)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0031_ingest_job_duplicates_apart"),
    ]

    operations = [
        # Reversed last, after the columns are NOT NULL again (a rebuild on SQLite, which drops them).
        migrations.RunPython(migrations.RunPython.noop, sort_on_plain_columns),
        migrations.AlterField(
            model_name="session",
            name="cache_read_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="session",
            name="cache_write_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(sort_on_unreported_as_lowest, migrations.RunPython.noop),
        migrations.RunPython(unreported_sums_as_null, unreported_sums_as_zero),
    ]
