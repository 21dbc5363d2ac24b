"""The words of each stored message, for the conversation search's full-text index.

On PostgreSQL each user and assistant message's ``to_tsvector('simple', data)`` is kept in the
event's ``words`` column (migration 0051), which a GIN index covers. Computing it is most of what
storing a message costs the database, so the ingest leaves the column null and this follow-up fills
it once the session's rows are committed; :class:`dashboard.models.sessions.MessageMatches` finds a
message whose words are still null by computing them at search time. SQLite searches by LIKE.
"""

from __future__ import annotations

from django.db import connection, transaction

from dashboard.models.sessions import CONVERSATION_TYPES, TEXT_SEARCH_CONFIG


def message_words_index(session_ids: list[int]) -> int:
    """Fill the ``words`` of the messages of ``session_ids`` that have none yet; how many were filled.

    Idempotent: a message indexed already is not touched again.
    """
    if connection.vendor != "postgresql" or not session_ids:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE dashboard_event SET words = to_tsvector(%s::regconfig, data) "
            "WHERE session_id = ANY(%s) AND type = ANY(%s) AND words IS NULL",
            [TEXT_SEARCH_CONFIG, list(session_ids), list(CONVERSATION_TYPES)],
        )
        return cursor.rowcount
