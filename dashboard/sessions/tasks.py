"""The follow-up that indexes a stored session's messages for the conversation search."""

from __future__ import annotations

from celery import shared_task

from dashboard.ingest.followups import register_followup
from dashboard.jobs.options import IDEMPOTENT
from dashboard.sessions.message_words import message_words_index


@shared_task(name="dashboard.tasks.index_message_words", **IDEMPOTENT)
def message_words_task(session_ids: list[int]) -> None:
    """Fill the full-text words of the messages of ``session_ids`` not indexed yet."""
    message_words_index(session_ids)


@register_followup
def enqueue_message_words(session_ids: list[int]) -> None:
    """Index the sessions' new messages once their ingest has committed."""
    message_words_task.delay(session_ids)
