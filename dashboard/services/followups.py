"""Work that follows a session's ingest: folding its projections and analysing its requests.

Called on commit, so a task never looks for rows that a rolled-back transaction never wrote.
"""

from __future__ import annotations

from collections.abc import Callable

_FOLLOWUPS: list[Callable[[int], None]] = []


def register_followup(enqueue: Callable[[int], None]) -> Callable[[int], None]:
    """Register ``enqueue(session_id)`` to run after each session's ingest commits."""
    _FOLLOWUPS.append(enqueue)
    return enqueue


def enqueue_session_followups(session_id: int) -> None:
    for enqueue in _FOLLOWUPS:
        enqueue(session_id)
