"""One check (evaluate every rule, then send what is due) and the in-process runner that repeats it.

At scale Celery beat sends ``alerts_check_task`` every ``CACHESCOPE_ALERTS_EVERY_SECONDS``. The
embedded default has no beat: the web server starts :func:`alerts_runner_start` (from
``dashboard/wsgi.py``, which ``runserver`` and gunicorn both load), a daemon thread that runs the
same check on the same schedule while the server runs. Several web processes may each run one:
the evaluation and the sending are safe to run side by side (see :mod:`.evaluation`).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from dashboard.alerts.delivery import DeliveryResult, notifications_deliver
from dashboard.alerts.evaluation import CheckResult, alerts_evaluate

log = logging.getLogger(__name__)

_started: threading.Thread | None = None
_lock = threading.Lock()


def alerts_check(*, now: datetime | None = None) -> tuple[CheckResult, DeliveryResult]:
    """Evaluate every enabled rule at ``now`` and send the notifications that are due."""
    moment = now or timezone.now()
    result = alerts_evaluate(now=moment)
    return result, notifications_deliver(now=moment)


def _run_forever(stop: threading.Event, every: float) -> None:
    while not stop.wait(every):
        close_old_connections()
        try:
            alerts_check()
        except Exception:  # the runner must outlive a database hiccup or a bad rule
            log.exception("the alerts check failed; trying again in %s s", every)
        finally:
            close_old_connections()
    connection.close()


def alerts_runner_start(*, every: float | None = None) -> threading.Event | None:
    """Start this process's alerts runner once; the event that stops it, ``None`` when it runs
    already or is switched off (``CACHESCOPE_ALERTS_EVERY_SECONDS=0``)."""
    global _started
    seconds = settings.CACHESCOPE_ALERTS_EVERY_SECONDS if every is None else every
    if not seconds:
        return None
    with _lock:
        if _started is not None and _started.is_alive():
            return None
        stop = threading.Event()
        _started = threading.Thread(
            target=_run_forever, args=(stop, float(seconds)), name="alerts-runner", daemon=True
        )
        _started.start()
    return stop
