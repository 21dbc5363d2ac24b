"""Folds and analyses off the command line's critical path, where tasks run in-process.

On the embedded default there is no worker: enqueueing a follow-up runs it, so ``manage.py ingest``
would wait for every fold, analysis and what-if figure before returning, half its time on a first
ingest. Instead the command leaves the sessions' outbox rows (committed with them, see
:mod:`dashboard.ingest.followups`) and starts one detached process, ``manage.py resend_followups
--drain``, that runs them and exits, as a worker would; the command returns once the rows are
stored. ``report``, whose costs come from the analyses, first waits for that drain and runs what
is left itself (:func:`followups_settle`), so ``ingest`` then ``report`` reads every session
analysed.

One drain at a time: each holds a lock file in the data folder, and one started while another runs
waits for it, then drains what was written since. Every follow-up is idempotent, so a drain that
dies leaves its rows for the next one and costs no more than a repeat.

``CACHESCOPE_FOLLOWUPS=inline`` (or ``ingest --wait``) runs them in the command instead.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from dashboard.ingest.followups import FOLLOWUP_BATCH, enqueue_followups
from dashboard.models import PendingFollowup

log = logging.getLogger(__name__)

LOCK_NAME = "followups.lock"
LOG_NAME = "followups.log"
"""In the data folder: what a background drain wrote to its standard error (its failures)."""


def followups_in_background() -> bool:
    """Whether a command line's follow-ups go to a background drain: tasks run in-process (no
    broker; with one, workers take them anyway) and ``CACHESCOPE_FOLLOWUPS`` is not ``inline``."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER) and settings.CACHESCOPE_FOLLOWUPS == "background"


def drain_start() -> int:
    """Start ``manage.py resend_followups --drain`` detached from this process; return its pid.

    It outlives the command (its own session, so a Ctrl-C in the terminal after the command
    returned does not reach it) and finds the same database through the same environment.
    """
    data = Path(settings.DATA_DIR)
    data.mkdir(parents=True, exist_ok=True)  # with PostgreSQL and a SECRET_KEY nothing else made it
    package_parent = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_parent), env.get("PYTHONPATH", "")) if p)
    env.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    with (data / LOG_NAME).open("ab") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "django", "resend_followups", "--drain"],
            cwd=data,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
            close_fds=True,
        )
    return process.pid


@contextmanager
def _drain_lock() -> Iterator[None]:
    """Held while one process drains the outbox; another waits for it.

    Where the data folder cannot hold the lock file (read-only), the drain runs unlocked: two at
    once repeat some idempotent work, which beats leaving the follow-ups undone.
    """
    path = Path(settings.DATA_DIR) / LOCK_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        held = path.open("a")
    except OSError as error:
        log.warning("draining the follow-ups without the lock %s: %s", path, error)
        yield
        return
    with held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def outbox_drain() -> int:
    """Send the follow-ups of every session in the outbox, whatever its age, until none is left;
    return how many sessions were sent. Where tasks run in-process, they run here.

    A batch whose follow-ups fail is tried a session at a time, and a session that still fails is
    logged and left in the outbox (for the next drain), so one bad session holds up no other.
    """
    with _drain_lock():
        sent = 0
        failed: set[int] = set()
        while True:
            due = list(
                PendingFollowup.objects.exclude(session_id__in=failed)
                .order_by("since", "pk")
                .values_list("session_id", flat=True)[:FOLLOWUP_BATCH]
            )
            if not due:
                return sent
            try:
                refused = enqueue_followups(due)
            except Exception:
                log.warning("the follow-ups of %d sessions failed; each alone now", len(due), exc_info=True)
                refused = [session_id for session_id in due if not _send_alone(session_id)]
            # A refused session (a broker that stopped answering) waits for the next drain.
            failed.update(refused)
            sent += len(due) - len(refused)


def _send_alone(session_id: int) -> bool:
    try:
        return not enqueue_followups([session_id])
    except Exception:
        log.exception("the follow-ups of session %d failed; left for the next drain", session_id)
        return False


def followups_settle() -> None:
    """Before reading analyses where tasks run in-process: wait for a background drain, then run
    what it left. With a broker, workers run them and this does nothing."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        outbox_drain()
