"""Work that follows a session's ingest: folding its projections and analysing its requests.

Called on commit, so a task never looks for rows that a rolled-back transaction never wrote. A
broker that is down then must not undo anything: the rows are committed, the failure is reported
as "analysis pending", and the next ingest of the session enqueues its follow-ups again.

An ingest of many sessions (a folder, an API batch) gathers them (:func:`followups_gathered`) and
enqueues their follow-ups together, :data:`FOLLOWUP_BATCH` sessions a task: a fold or an analysis
of many sessions reads and writes them in a few queries and commits where one a session took a
dozen, and each analysis sees every other session of the batch, whatever order they were read in.

Enqueueing after a commit can be cut short (a web worker killed at its timeout), so the session's
transaction also writes a :class:`PendingFollowup` row, an outbox, deleted once the follow-ups are
enqueued. :func:`followups_resend` enqueues what such a request left behind; every follow-up is
idempotent, so enqueueing one twice costs a repeated task, never a wrong row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from importlib import import_module

from django.db import transaction
from django.utils import timezone

from dashboard.models import PendingFollowup
from dashboard.storage.db_outage import is_unavailable

log = logging.getLogger(__name__)


def broker_errors() -> tuple[type[BaseException], ...]:
    """What enqueueing raises while the broker cannot be reached.

    Built on first use: kombu's exceptions load its AMQP client, which a command that never
    enqueues (check, --help) need not import.
    """
    from kombu.exceptions import OperationalError as BrokerError

    return (BrokerError, ConnectionError, TimeoutError)


Enqueue = Callable[[list[int]], None]
"""A follow-up: sends the task that does its work for the sessions of the ids given."""

_FOLLOWUPS: list[Enqueue] = []
_FOLLOWUP_MODULES: list[str] = []

FOLLOWUP_BATCH = 50
"""Sessions a follow-up task takes at most: enough to share its queries and commits, few enough
that workers share a large ingest and the first sessions are analysed while the rest are read."""


def register_followup(enqueue: Enqueue) -> Enqueue:
    """Register ``enqueue(session_ids)`` to run after the ingest of those sessions commits."""
    _FOLLOWUPS.append(enqueue)
    return enqueue


def register_followups_module(name: str) -> None:
    """Name a module whose import registers follow-ups; it is imported when the first one is due."""
    _FOLLOWUP_MODULES.append(name)


def _followups() -> list[Enqueue]:
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
    """Enqueue every follow-up of ``session_id``; ``False`` when the broker refused any of them."""
    return not enqueue_followups([session_id])


def enqueue_followups(session_ids: list[int]) -> list[int]:
    """Enqueue every follow-up of ``session_ids``, :data:`FOLLOWUP_BATCH` sessions a task; return
    the ids whose follow-ups the broker refused, in part or whole.

    Once a session's follow-ups are all enqueued its outbox row is deleted (inside
    :func:`followups_clear_later`, by the next transaction); a refused one leaves it for a resend.
    """
    refused: list[int] = []
    # Once each, in order: a session stored twice in one ingest (the same log in two folders) has
    # one set of follow-ups, and a task never folds or analyses a session twice over.
    session_ids = list(dict.fromkeys(session_ids))
    deferred = _deferred.get()
    if deferred is not None:
        # Their outbox rows stay, committed with the sessions: the background drain takes them.
        deferred.extend(session_ids)
        return refused
    for start in range(0, len(session_ids), FOLLOWUP_BATCH):
        batch = session_ids[start : start + FOLLOWUP_BATCH]
        sent = True
        for enqueue in _followups():
            try:
                enqueue(batch)
            except broker_errors():
                sent = False
        if not sent:
            refused.extend(batch)
            continue
        delivered = _delivered.get()
        if delivered is None:
            PendingFollowup.objects.filter(session_id__in=batch).delete()
        else:
            delivered.extend(batch)
    return refused


class Gathered:
    """The sessions of a :func:`followups_gathered` block whose follow-ups are due, and those the
    broker refused once enqueued."""

    def __init__(self) -> None:
        self.due: list[int] = []
        self.refused: list[int] = []

    def add(self, session_id: int) -> None:
        self.due.append(session_id)
        if len(self.due) >= FOLLOWUP_BATCH:
            self.send()

    def send(self) -> None:
        due, self.due = self.due, []
        self.refused.extend(enqueue_followups(due))


_gathered: ContextVar[Gathered | None] = ContextVar("followups_gathered", default=None)


@contextmanager
def followups_gathered() -> Iterator[Gathered]:
    """Within the block, :func:`followups_due` gathers the sessions rather than enqueueing each one;
    they are enqueued together, a batch whenever :data:`FOLLOWUP_BATCH` are due and the rest at the
    block's end. Read ``refused`` after the block for the sessions the broker refused.

    Should the block stop on an error, what it gathered is still enqueued before the error goes on;
    an interruption (Ctrl-C, a worker's shutdown) leaves it to the outbox's resend instead, as
    enqueueing in-process runs the follow-ups and would only delay the stop.
    """
    gathered = Gathered()
    token = _gathered.set(gathered)
    try:
        yield gathered
    except Exception:
        # The sessions committed before the error keep their follow-ups; a failure to enqueue them
        # (the database or broker the error came from) leaves them to the outbox's resend.
        _send_after_error(gathered)
        raise
    finally:
        _gathered.reset(token)
    gathered.send()


def _send_after_error(gathered: Gathered) -> None:
    count = len(gathered.due)
    try:
        gathered.send()
    except Exception as error:
        if is_unavailable(error):
            # The error that stopped the ingest says so in its own line; the outbox rows committed
            # with the sessions, so the next ingest or resend_followups sends them.
            log.info(
                "the follow-ups of %d stored sessions wait in the outbox: the database is unavailable", count
            )
            return
        log.exception("the follow-ups of %d stored sessions were left to the resend", count)


def followups_due(session_id: int) -> bool:
    """Called once ``session_id``'s ingest committed: gather it within :func:`followups_gathered`,
    else enqueue its follow-ups now; ``False`` when the broker refused them."""
    gathered = _gathered.get()
    if gathered is None:
        return enqueue_session_followups(session_id)
    gathered.add(session_id)
    return True


_delivered: ContextVar[list[int] | None] = ContextVar("followups_delivered", default=None)

_deferred: ContextVar[list[int] | None] = ContextVar("followups_deferred", default=None)


@contextmanager
def followups_deferred() -> Iterator[list[int]]:
    """Within the block nothing is enqueued: the sessions' outbox rows stay for a later drain
    (:mod:`dashboard.worker.drain`), and the list yielded gathers their ids.

    Where tasks run in-process, enqueueing a follow-up runs it, so a command line that stores logs
    would wait for every fold and analysis; deferred, it returns once the rows are stored.
    """
    deferred: list[int] = []
    token = _deferred.set(deferred)
    try:
        yield deferred
    finally:
        _deferred.reset(token)


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
    session_ids = list(pending.values_list("session_id", flat=True)[:limit])
    return len(session_ids) - len(enqueue_followups(session_ids))


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
