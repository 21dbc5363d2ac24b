"""Job leases: a claim that holds only while its worker keeps renewing it.

A worker that claims a job writes ``lease_until`` a short while ahead and a :class:`Heartbeat`
moves it on from a thread while the job runs. A worker that dies (``kill -9``, a lost machine)
stops renewing, the lease runs out, and the sweep on any other worker hands the job on within
about one lease. A live worker's lease never runs out, so its job is never run twice; and if a
worker stalls past its lease and the job is taken over, its next renewal fails and it stops.

Every claim and renewal is one conditional UPDATE, so two workers racing for a job cannot both win.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from types import TracebackType

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

log = logging.getLogger(__name__)


class LeaseLost(RuntimeError):
    """This worker's lease on a job ran out and another worker took the job: stop working on it."""


def lease_seconds() -> int:
    """How long a claim holds without renewal (``CACHESCOPE_JOB_LEASE_SECONDS``)."""
    return int(settings.CACHESCOPE_JOB_LEASE_SECONDS)


def lease_owner(task_id: str | None) -> str:
    """A name for one execution of a task, unique even when the broker delivers the same task twice."""
    return f"{task_id or 'in-process'}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"[:200]


class Heartbeat:
    """Renew a lease every third of its length from a thread, while the ``with`` block runs.

    ``renew()`` returns whether the lease is still held; once it says no, :attr:`lost` is set and
    the job's own code should stop at its next progress point (:meth:`check`).
    """

    def __init__(self, renew: Callable[[], bool], *, seconds: int) -> None:
        self._renew = renew
        self._interval = max(seconds / 3, 0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)
        self.lost = False

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def check(self) -> None:
        """Raise :class:`LeaseLost` once the lease has been taken over."""
        if self.lost:
            raise LeaseLost("the job's lease ran out and another worker took it over")

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._interval):
                close_old_connections()
                try:
                    held = self._renew()
                except DatabaseError as error:
                    # A database that is busy or restarting: the lease is not lost, try again soon.
                    # One line, not a traceback: a command prints its own line for a database gone.
                    log.warning("could not renew a job lease, trying again: %s", str(error).split("\n")[0])
                    continue
                if not held:
                    self.lost = True
                    return
        finally:
            connection.close()  # this thread's own connection
