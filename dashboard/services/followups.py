"""Work that follows a session's ingest: folding its projections and analysing its requests.

Called on commit, so a task never looks for rows that a rolled-back transaction never wrote. A
broker that is down then must not undo anything: the rows are committed, the failure is reported
as "analysis pending", and the next ingest of the session enqueues its follow-ups again.

Enqueueing after a commit can be cut short (a web worker killed at its timeout), so the session's
transaction also writes a :class:`PendingFollowup` row, an outbox, deleted once the follow-ups are
enqueued. :func:`followups_resend` enqueues what such a request left behind; every follow-up is
idempotent, so enqueueing one twice costs a repeated task, never a wrong row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from importlib import import_module

from django.db import transaction
from django.utils import timezone

from dashboard.models import PendingFollowup


def broker_errors() -> tuple[type[BaseException], ...]:
    """What enqueueing raises while the broker cannot be reached.

    Built on first use: kombu's exceptions load its AMQP client, which a command that never
    enqueues (check, --help) need not import.
    """
    from kombu.exceptions import OperationalError as BrokerError

    return (BrokerError, ConnectionError, TimeoutError)


_FOLLOWUPS: list[Callable[[int], None]] = []
_FOLLOWUP_MODULES: list[str] = []


def register_followup(enqueue: Callable[[int], None]) -> Callable[[int], None]:
    """Register ``enqueue(session_id)`` to run after each session's ingest commits."""
    _FOLLOWUPS.append(enqueue)
    return enqueue


def register_followups_module(name: str) -> None:
    """Name a module whose import registers follow-ups; it is imported when the first one is due."""
    _FOLLOWUP_MODULES.append(name)


def _followups() -> list[Callable[[int], None]]:
    # Every call imports every named module: a name taken off the list before its import finished
    # would leave a second thread, mid-import, with no follow-ups, and its outbox row deleted as
    # delivered. import_module is thread-safe, and free once a module is loaded.
    for name in _FOLLOWUP_MODULES:
        import_module(name)
    return _FOLLOWUPS


RESEND_AFTER = timedelta(minutes=2)
"""How old an outbox row must be before a resend takes it: older than any request still enqueueing."""
RESEND_BATCH = 100


def followups_record(session_id: int) -> None:
    """Note, inside the session's transaction, that its follow-ups are still to be enqueued."""
    PendingFollowup.objects.bulk_create([PendingFollowup(session_id=session_id)], ignore_conflicts=True)


def followups_pending(session_id: int) -> bool:
    """Whether ``session_id``'s follow-ups are still waiting in the outbox (a broker refused them)."""
    return PendingFollowup.objects.filter(session_id=session_id).exists()


def enqueue_session_followups(session_id: int) -> bool:
    """Enqueue every follow-up of ``session_id``; ``False`` when the broker refused any of them.

    Once all are enqueued the session's outbox row is deleted (inside :func:`followups_clear_later`,
    by the next transaction); a refused one leaves it for a resend.
    """
    sent = True
    for enqueue in _followups():
        try:
            enqueue(session_id)
        except broker_errors():
            sent = False
    if sent:
        delivered = _delivered.get()
        if delivered is None:
            PendingFollowup.objects.filter(session_id=session_id).delete()
        else:
            delivered.append(session_id)
    return sent


_delivered: ContextVar[list[int] | None] = ContextVar("followups_delivered", default=None)


@contextmanager
def followups_clear_later() -> Iterator[None]:
    """Within the block, the outbox row of a session whose follow-ups are all enqueued is not deleted
    by a write of its own, which on PostgreSQL costs a flush of its log: the next session's
    transaction deletes it (:func:`followups_clear_delivered`), and the block's end what is left.

    A row left a while longer, or for good should the block stop on an error, costs no more than a
    resend enqueueing its idempotent follow-ups again.
    """
    delivered: list[int] = []
    token = _delivered.set(delivered)
    try:
        yield
        followups_clear_delivered()
    finally:
        _delivered.reset(token)


def followups_clear_delivered() -> None:
    """In a transaction the caller commits anyway, delete the outbox rows of the sessions delivered so
    far in a :func:`followups_clear_later` block; they are forgotten once it commits, and kept for
    the next one should it roll back."""
    delivered = _delivered.get()
    if not delivered:
        return
    cleared = set(delivered)
    # Rows another transaction holds are passed over, never waited for: two ingests clearing the
    # same rows in different orders would otherwise deadlock, and PostgreSQL would cancel one of
    # them, losing that session's ingest for a row whose only cost left behind is a resend.
    # Its own transaction at a block's end, the caller's (with no savepoint) inside one.
    with transaction.atomic(savepoint=False):
        free = PendingFollowup.objects.select_for_update(skip_locked=True).filter(session_id__in=cleared)
        PendingFollowup.objects.filter(pk__in=list(free.values_list("pk", flat=True))).delete()

    def forget() -> None:
        delivered[:] = [session_id for session_id in delivered if session_id not in cleared]

    transaction.on_commit(forget)


def followups_resend(*, older_than: timedelta = RESEND_AFTER, limit: int = RESEND_BATCH) -> int:
    """Enqueue the follow-ups of up to ``limit`` sessions left in the outbox; return how many went."""
    cutoff = timezone.now() - older_than
    pending = PendingFollowup.objects.filter(since__lte=cutoff).order_by("since")
    sent = 0
    for session_id in list(pending.values_list("session_id", flat=True)[:limit]):
        if not enqueue_session_followups(session_id):
            break  # the broker is down: the rest wait for the next resend
        sent += 1
    return sent


def broker_reachable(*, timeout: float = 2.0) -> bool:
    """Whether the task broker answers now; always true where tasks run in-process."""
    from dashboard.celery import app

    if app.conf.task_always_eager:
        return True
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout)
    except (*broker_errors(), OSError):
        return False
    return True
