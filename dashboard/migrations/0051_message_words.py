"""The full-text index of the messages, built after the ingest rather than inside it.

Migration 0046 indexed ``to_tsvector('simple', data)`` of every user and assistant message, so each
insert computed the vector: 120 ms of a 0.9 s first ingest of 15 MB of Claude Code transcripts went
to it, inside the ingest's transaction. Here, on PostgreSQL, the vector gets a column of its own,
``words``, filled by a follow-up of the ingest (:mod:`dashboard.sessions.message_words`), and the
GIN index covers that column; a message not indexed yet (``words`` still null: the follow-up has not
run) is found by computing its vector at search time, over a small partial index of such rows, so a
search never misses what is stored. SQLite searches by LIKE and has none of this.

The column is filled here for the messages already stored, in batches; at 10 million events that
takes minutes, with the table open to reads.
"""

from django.db import migrations

TYPES = "('user/message', 'assistant/message')"
BATCH = 20_000


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    execute = schema_editor.execute
    execute("ALTER TABLE dashboard_event ADD COLUMN IF NOT EXISTS words tsvector")
    with schema_editor.connection.cursor() as cursor:
        while True:
            cursor.execute(
                "UPDATE dashboard_event SET words = to_tsvector('simple'::regconfig, data) WHERE id IN ("
                "SELECT id FROM dashboard_event WHERE type = ANY(%s) AND words IS NULL LIMIT %s)",
                [["user/message", "assistant/message"], BATCH],
            )
            if cursor.rowcount < BATCH:
                break
    execute(
        "CREATE INDEX IF NOT EXISTS event_words ON dashboard_event USING gin (words) WHERE words IS NOT NULL"
    )
    execute(
        "CREATE INDEX IF NOT EXISTS event_words_pending ON dashboard_event (session_id) "
        f"WHERE words IS NULL AND type IN {TYPES}"
    )
    execute("DROP INDEX IF EXISTS event_message_words")


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS event_message_words ON dashboard_event "
        f"USING gin (to_tsvector('simple'::regconfig, data)) WHERE type IN {TYPES}"
    )
    schema_editor.execute("DROP INDEX IF EXISTS event_words_pending")
    schema_editor.execute("DROP INDEX IF EXISTS event_words")
    schema_editor.execute("ALTER TABLE dashboard_event DROP COLUMN IF EXISTS words")


class Migration(migrations.Migration):
    # The batches commit as they go, so a long backfill holds no lock on what it filled already.
    atomic = False

    dependencies = [
        ("dashboard", "0050_savings_computed_at_index"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
