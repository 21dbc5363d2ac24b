"""Indexes that let the sessions list sort by a figure column without sorting the whole table.

The list orders by (sort key, id) with select_related joins between its LIMIT and its ORDER BY, so
without an index on the sort key PostgreSQL sorts every session in full (an external merge on disk
at 100,000 sessions, about 140 ms) to return 51 rows. With one, it walks the index backwards or
forwards and stops after 51 rows. Nullable keys are sorted as COALESCE(column, lowest), so their
index is on that same expression. The indexes are plain SQL, outside the model state: the model
declares only the indexes its own queries are written against.
"""

from __future__ import annotations

from django.db import migrations

SORTED_COLUMNS = (
    ("session_sort_events", "event_count"),
    ("session_sort_requests", "request_count"),
    ("session_sort_uncached", "uncached_input_tokens"),
    ("session_sort_read", "cache_read_tokens"),
    ("session_sort_write", "cache_write_tokens"),
    ("session_sort_output", "output_tokens"),
    ("session_sort_warnings", "warning_count"),
    # The list sorts hit rate as COALESCE(hit_rate, -1.0): the index must hold the same expression.
    ("session_sort_hit_rate", "(COALESCE(hit_rate, -1.0))"),
)


def create_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    for name, key in SORTED_COLUMNS:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON dashboard_session ({key}, id)")


def drop_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    for name, _ in SORTED_COLUMNS:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0006_session_activity_required"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes),
    ]
