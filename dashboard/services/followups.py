"""Work that follows a session's ingest: folding its projections and analysing its requests.

Called on commit, so a task never looks for rows that a rolled-back transaction never wrote. A
broker that is down then must not undo anything: the rows are committed, the failure is reported
as "analysis pending", and the next ingest of the session enqueues its follow-ups again.
"""

from __future__ import annotations

from collections.abc import Callable

from kombu.exceptions import OperationalError as BrokerError

BROKER_ERRORS: tuple[type[BaseException], ...] = (BrokerError, ConnectionError, TimeoutError)
"""What enqueueing raises while the broker cannot be reached."""

_FOLLOWUPS: list[Callable[[int], None]] = []


def register_followup(enqueue: Callable[[int], None]) -> Callable[[int], None]:
    """Register ``enqueue(session_id)`` to run after each session's ingest commits."""
    _FOLLOWUPS.append(enqueue)
    return enqueue


def enqueue_session_followups(session_id: int) -> bool:
    """Enqueue every follow-up of ``session_id``; ``False`` when the broker refused any of them."""
    delivered = True
    for enqueue in _FOLLOWUPS:
        try:
            enqueue(session_id)
        except BROKER_ERRORS:
            delivered = False
    return delivered


def broker_reachable(*, timeout: float = 2.0) -> bool:
    """Whether the task broker answers now; always true where tasks run in-process."""
    from dashboard.celery import app

    if app.conf.task_always_eager:
        return True
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout)
    except (*BROKER_ERRORS, OSError):
        return False
    return True
