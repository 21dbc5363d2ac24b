"""The inbox's groups (the warnings of one kind in one session, summed), kept by database triggers.

The inbox grouped and sorted every warning of the fleet on each page it showed. The triggers
recompute the group of every kind and session a statement touches, from that group's own warnings
(an index lookup), so the page reads the groups it shows off an index in stake order. On
PostgreSQL a statement's groups are created if missing and locked in one order before they are
counted, so a writer that waits for another counts that one's warnings too. The fill runs after
the triggers exist, in the migration's transaction: creating them holds off writes to the
warnings until the commit. One pass over the warnings; reversing drops the triggers and the table.

On SQLite, Django alters a column by building the table anew, which drops its triggers: a
later migration that does so to the warnings must create these again (``triggers_create``
here); the tests of what the triggers keep fail until it does.
"""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

POSTGRESQL_CREATE = [
    """
    CREATE FUNCTION dashboard_warning_groups_refresh(kinds text[], sessions bigint[]) RETURNS void
    LANGUAGE sql VOLATILE AS $$
        INSERT INTO dashboard_warninggroup (kind, session_id, places, occurrences, tokens)
        SELECT kind, session_id, 0, 0, 0 FROM unnest(kinds, sessions) AS t(kind, session_id)
        ORDER BY kind, session_id
        ON CONFLICT (kind, session_id) DO NOTHING;
        SELECT 1 FROM dashboard_warninggroup AS g
        JOIN unnest(kinds, sessions) AS t(kind, session_id)
          ON g.kind = t.kind AND g.session_id = t.session_id
        ORDER BY g.kind, g.session_id FOR UPDATE OF g;
        UPDATE dashboard_warninggroup AS g
        SET places = a.places, occurrences = a.occurrences, tokens = a.tokens, cost = a.cost,
            happened = a.happened
        FROM unnest(kinds, sessions) AS t(kind, session_id)
        CROSS JOIN LATERAL (
            SELECT count(*) AS places, coalesce(sum(w.count), 0) AS occurrences,
                   coalesce(sum(w.tokens_at_stake), 0) AS tokens, sum(w.cost_at_stake) AS cost,
                   max(w.happened_at) AS happened
            FROM dashboard_warning AS w WHERE w.kind = t.kind AND w.session_id = t.session_id
        ) AS a
        WHERE g.kind = t.kind AND g.session_id = t.session_id;
        DELETE FROM dashboard_warninggroup AS g USING unnest(kinds, sessions) AS t(kind, session_id)
        WHERE g.kind = t.kind AND g.session_id = t.session_id AND g.places = 0;
    $$
    """,
    """
    CREATE FUNCTION dashboard_warning_group() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        kinds text[];
        sessions bigint[];
    BEGIN
        IF TG_OP = 'INSERT' THEN
            SELECT array_agg(kind ORDER BY kind, session_id), array_agg(session_id ORDER BY kind, session_id)
            INTO kinds, sessions FROM (SELECT DISTINCT kind, session_id FROM new_rows) AS touched;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(kind ORDER BY kind, session_id), array_agg(session_id ORDER BY kind, session_id)
            INTO kinds, sessions FROM (SELECT DISTINCT kind, session_id FROM old_rows) AS touched;
        ELSE
            SELECT array_agg(kind ORDER BY kind, session_id), array_agg(session_id ORDER BY kind, session_id)
            INTO kinds, sessions FROM (
                SELECT kind, session_id FROM new_rows UNION SELECT kind, session_id FROM old_rows
            ) AS touched;
        END IF;
        IF kinds IS NOT NULL THEN
            PERFORM dashboard_warning_groups_refresh(kinds, sessions);
        END IF;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER dashboard_warning_group_insert AFTER INSERT ON dashboard_warning
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dashboard_warning_group()
    """,
    """
    CREATE TRIGGER dashboard_warning_group_update AFTER UPDATE ON dashboard_warning
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_warning_group()
    """,
    """
    CREATE TRIGGER dashboard_warning_group_delete AFTER DELETE ON dashboard_warning
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dashboard_warning_group()
    """,
]
POSTGRESQL_CREATE.append(
    # The inbox's order. Only here: SQLite takes no NULLS LAST in an index (and sorts NULLs last
    # in a descending order anyway).
    """
    CREATE INDEX warning_group_stake ON dashboard_warninggroup
    (cost DESC NULLS LAST, happened DESC NULLS LAST, kind, session_id)
    """
)
POSTGRESQL_DROP = [
    "DROP INDEX IF EXISTS warning_group_stake",
    "DROP TRIGGER IF EXISTS dashboard_warning_group_insert ON dashboard_warning",
    "DROP TRIGGER IF EXISTS dashboard_warning_group_update ON dashboard_warning",
    "DROP TRIGGER IF EXISTS dashboard_warning_group_delete ON dashboard_warning",
    "DROP FUNCTION IF EXISTS dashboard_warning_group()",
    "DROP FUNCTION IF EXISTS dashboard_warning_groups_refresh(text[], bigint[])",
]


_SQLITE_REFRESH = """
    DELETE FROM dashboard_warninggroup WHERE kind = ROW.kind AND session_id = ROW.session_id;
    INSERT INTO dashboard_warninggroup (kind, session_id, places, occurrences, tokens, cost, happened)
    SELECT kind, session_id, count(*), coalesce(sum(count), 0), coalesce(sum(tokens_at_stake), 0),
           sum(cost_at_stake), max(happened_at)
    FROM dashboard_warning WHERE kind = ROW.kind AND session_id = ROW.session_id
    GROUP BY kind, session_id;
"""
"""Makes the group of the trigger's ``ROW`` (``NEW`` or ``OLD``) again from its warnings."""
_OLD, _NEW = _SQLITE_REFRESH.replace("ROW.", "OLD."), _SQLITE_REFRESH.replace("ROW.", "NEW.")
SQLITE_CREATE = [
    "CREATE TRIGGER dashboard_warning_group_insert AFTER INSERT ON dashboard_warning BEGIN" + _NEW + "END",
    "CREATE TRIGGER dashboard_warning_group_update AFTER UPDATE ON dashboard_warning BEGIN"
    + _OLD
    + _NEW
    + "END",
    "CREATE TRIGGER dashboard_warning_group_delete AFTER DELETE ON dashboard_warning BEGIN" + _OLD + "END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS dashboard_warning_group_insert",
    "DROP TRIGGER IF EXISTS dashboard_warning_group_update",
    "DROP TRIGGER IF EXISTS dashboard_warning_group_delete",
]
FILL = """
    INSERT INTO dashboard_warninggroup (kind, session_id, places, occurrences, tokens, cost, happened)
    SELECT kind, session_id, count(*), coalesce(sum(count), 0), coalesce(sum(tokens_at_stake), 0),
           sum(cost_at_stake), max(happened_at)
    FROM dashboard_warning GROUP BY kind, session_id
"""


def _statements(vendor: str, *, create: bool) -> list[str]:
    if vendor == "postgresql":
        return POSTGRESQL_CREATE if create else POSTGRESQL_DROP
    if vendor == "sqlite":
        return SQLITE_CREATE if create else SQLITE_DROP
    raise RuntimeError(f"migration 0027 keeps the inbox's groups on PostgreSQL or SQLite, not {vendor}")


def triggers_create(apps: Any, schema_editor: Any) -> None:
    for statement in [*_statements(schema_editor.connection.vendor, create=True), FILL]:
        schema_editor.execute(statement)


def triggers_drop(apps: Any, schema_editor: Any) -> None:
    for statement in _statements(schema_editor.connection.vendor, create=False):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0026_projection_tally"),
    ]

    operations = [
        migrations.CreateModel(
            name="WarningGroup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=40)),
                ("places", models.PositiveIntegerField(default=0)),
                ("occurrences", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("cost", models.DecimalField(blank=True, decimal_places=8, max_digits=24, null=True)),
                ("happened", models.DateTimeField(blank=True, null=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="dashboard.session"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("kind", "session"), name="warning_group_once_per_kind")
                ],
            },
        ),
        migrations.RunPython(triggers_create, triggers_drop, elidable=False),
    ]
