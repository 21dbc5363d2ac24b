"""A full-text index over what the user and the model said, for the sessions list's search.

On PostgreSQL: a partial GIN index of ``to_tsvector('simple', data)`` over the user and assistant
messages, the expression :class:`dashboard.models.sessions.MessageMatches` searches, so a search
reads the index rather than every event. SQLite searches the messages by LIKE and has no index.
Built with the table locked against writes; at 10 million events that takes minutes, so a large
deployment may create it beforehand with ``CREATE INDEX CONCURRENTLY`` under the same name.
"""

from django.db import migrations

INDEX = "event_message_words"


def create_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON dashboard_event "
        "USING gin (to_tsvector('simple'::regconfig, data)) "
        "WHERE type IN ('user/message', 'assistant/message')"
    )


def drop_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0045_ingest_job_sessions_unchanged"),
    ]

    operations = [
        migrations.RunPython(create_index, drop_index),
    ]
