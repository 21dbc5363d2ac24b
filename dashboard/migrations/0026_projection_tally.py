"""Tallies of the stored projection rows per key and state version, kept by database triggers.

The projections page counted all of a fleet's projection rows (one per session and key) on every
view. The triggers append one tally row per key and version a statement changes — PostgreSQL
once per statement from its transition tables, SQLite once per row — so the fold, a re-fold, a
deleted session's cascade and a bulk COPY all keep them, and no writer waits on another for a
shared counter. The fill runs in the migration's transaction after the triggers exist: on
PostgreSQL, creating a trigger holds off writes to the rows until the commit, so no row is counted
twice or missed. One pass over the rows; reversing drops the triggers and the table.

On SQLite, Django alters a column by building the table anew, which drops its triggers: a
later migration that does so to the projection rows must create these again (``triggers_create``
here); the tests of what the triggers keep fail until it does.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

POSTGRESQL_CREATE = [
    """
    CREATE FUNCTION dashboard_projection_tally() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
            SELECT key, ver, count(*), coalesce(sum(state_bytes), 0),
                   count(*) FILTER (WHERE error <> ''), max(updated_at)
            FROM new_rows GROUP BY key, ver;
        END IF;
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
            SELECT key, ver, -count(*), -coalesce(sum(state_bytes), 0),
                   -count(*) FILTER (WHERE error <> ''), NULL
            FROM old_rows GROUP BY key, ver;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER dashboard_projection_tally_insert AFTER INSERT ON dashboard_projectionrow
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_projection_tally()
    """,
    """
    CREATE TRIGGER dashboard_projection_tally_update AFTER UPDATE ON dashboard_projectionrow
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_projection_tally()
    """,
    """
    CREATE TRIGGER dashboard_projection_tally_delete AFTER DELETE ON dashboard_projectionrow
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_projection_tally()
    """,
]
POSTGRESQL_DROP = [
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_insert ON dashboard_projectionrow",
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_update ON dashboard_projectionrow",
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_delete ON dashboard_projectionrow",
    "DROP FUNCTION IF EXISTS dashboard_projection_tally()",
]
SQLITE_CREATE = [
    """
    CREATE TRIGGER dashboard_projection_tally_insert AFTER INSERT ON dashboard_projectionrow BEGIN
        INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
        VALUES (NEW.key, NEW.ver, 1, NEW.state_bytes, NEW.error <> '', NEW.updated_at);
    END
    """,
    """
    CREATE TRIGGER dashboard_projection_tally_update AFTER UPDATE ON dashboard_projectionrow BEGIN
        INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
        VALUES (OLD.key, OLD.ver, -1, -OLD.state_bytes, -(OLD.error <> ''), NULL);
        INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
        VALUES (NEW.key, NEW.ver, 1, NEW.state_bytes, NEW.error <> '', NEW.updated_at);
    END
    """,
    """
    CREATE TRIGGER dashboard_projection_tally_delete AFTER DELETE ON dashboard_projectionrow BEGIN
        INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
        VALUES (OLD.key, OLD.ver, -1, -OLD.state_bytes, -(OLD.error <> ''), NULL);
    END
    """,
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_insert",
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_update",
    "DROP TRIGGER IF EXISTS dashboard_projection_tally_delete",
]
FILL = """
    INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
    SELECT key, ver, count(*), coalesce(sum(state_bytes), 0),
           sum(CASE WHEN error <> '' THEN 1 ELSE 0 END), max(updated_at)
    FROM dashboard_projectionrow GROUP BY key, ver
"""


def _statements(vendor: str, *, create: bool) -> list[str]:
    if vendor == "postgresql":
        return POSTGRESQL_CREATE if create else POSTGRESQL_DROP
    if vendor == "sqlite":
        return SQLITE_CREATE if create else SQLITE_DROP
    raise RuntimeError(f"migration 0026 keeps projection tallies on PostgreSQL or SQLite, not {vendor}")


def triggers_create(apps: Any, schema_editor: Any) -> None:
    for statement in [*_statements(schema_editor.connection.vendor, create=True), FILL]:
        schema_editor.execute(statement)


def triggers_drop(apps: Any, schema_editor: Any) -> None:
    for statement in _statements(schema_editor.connection.vendor, create=False):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0025_request_model_ingest_recent_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectionTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=80)),
                ("ver", models.PositiveIntegerField()),
                ("rows", models.BigIntegerField(default=0)),
                ("state_bytes", models.BigIntegerField(default=0)),
                (
                    "errors",
                    models.BigIntegerField(
                        default=0, help_text="Rows whose fold stopped (a non-empty error)."
                    ),
                ),
                (
                    "last_fold",
                    models.DateTimeField(
                        blank=True,
                        help_text="The latest write of a row it counts; null for a removal.",
                        null=True,
                    ),
                ),
            ],
        ),
        migrations.RunPython(triggers_create, triggers_drop, elidable=False),
    ]
