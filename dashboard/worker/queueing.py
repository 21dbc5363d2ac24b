"""Putting jobs on the queue where a broker can refuse, and handing on jobs whose worker died.

A job row is committed before its task is sent. When the broker does not answer, the job is marked
"not queued" instead of answering 500 and leaving a job that looks queued forever; an operator
retries it from its page. Every worker also sweeps, every half lease, for jobs whose lease ran out
(see :mod:`dashboard.jobs.leases`) and queues them again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_ready
from django.db import close_old_connections, connection

from dashboard.analysis.stored_sessions import analyses_release_lapsed
from dashboard.analysis.tasks import analyse_session_task
from dashboard.ingest.followups import broker_errors
from dashboard.ingest.jobs import ingest_job_not_queued, ingest_jobs_release_lapsed
from dashboard.ingest.tasks import ingest_job_task
from dashboard.ingest.uploads import uploads_remove_expired
from dashboard.jobs.leases import lease_seconds
from dashboard.refold.runs import fold_run_not_queued, fold_runs_release_lapsed
from dashboard.refold.tasks import RESUME_QUEUE, refold_run_task

log = logging.getLogger(__name__)

SEND_ERRORS: tuple[type[BaseException], ...] = (*broker_errors(), OSError)
"""What sending a task raises while the broker cannot be reached."""


def ingest_job_enqueue(job_id: int) -> bool:
    """Send job ``job_id``'s task; ``False``, with the job marked not queued, when the broker refuses."""
    try:
        ingest_job_task.delay(job_id)
    except SEND_ERRORS as error:
        ingest_job_not_queued(job_id=job_id, reason=str(error) or type(error).__name__)
        return False
    return True


def refold_run_enqueue(run_id: int, *, resume: bool = False) -> bool:
    """Send run ``run_id``'s task; ``False``, with the run marked not queued, when the broker refuses."""
    try:
        if resume:
            # Past the later runs' chunks on the refold queue (see RESUME_QUEUE).
            refold_run_task.apply_async((run_id,), {"resume": True}, queue=RESUME_QUEUE)
        else:
            refold_run_task.delay(run_id)
    except SEND_ERRORS as error:
        fold_run_not_queued(run_id=run_id, reason=str(error) or type(error).__name__)
        return False
    return True


def jobs_take_over() -> int:
    """Queue again every job whose lease ran out; return how many were queued."""
    queued = 0
    for job_id in ingest_jobs_release_lapsed():
        queued += ingest_job_enqueue(job_id)
    for run_id in fold_runs_release_lapsed():
        queued += refold_run_enqueue(run_id, resume=True)
    for session_id in analyses_release_lapsed():
        try:
            analyse_session_task.delay(session_id)
        except SEND_ERRORS:
            continue  # left queued: the session's next ingest or an operator's re-analysis sends it
        queued += 1
    return queued


def _sweep_forever(stop: threading.Event) -> None:
    interval = max(lease_seconds() / 2, 1.0)
    while not stop.wait(interval):
        close_old_connections()
        try:
            jobs_take_over()
            uploads_remove_expired()
        except Exception:  # the sweep must outlive a database or broker hiccup
            log.exception("the sweep for jobs whose worker died failed; trying again")
    connection.close()


@worker_ready.connect(dispatch_uid="cachescope_jobs_take_over")
def start_sweep(**_: Any) -> None:
    """Start this worker's sweep for lapsed leases, in a thread beside the worker's own work."""
    threading.Thread(
        target=_sweep_forever, args=(threading.Event(),), name="lease-sweep", daemon=True
    ).start()
