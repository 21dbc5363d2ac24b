"""Celery tasks, thin over the services: ids in, claim the job, call the service, record progress.

Each task has an explicit name, so routing (``CELERY_TASK_ROUTES``) and messages already queued
survive a module being moved.
"""

# The configured app first, so every ``shared_task`` below binds to it wherever this package is
# imported from (a worker, a view that enqueues, the ingest follow-ups).
import dashboard.celery  # noqa: F401
from dashboard.alerts.tasks import alerts_check_task
from dashboard.analysis.tasks import analyse_session_task, analyse_sessions_task
from dashboard.ingest.tasks import ingest_job_task
from dashboard.refold.tasks import fold_session_task, fold_sessions_task, refold_chunk_task, refold_run_task
from dashboard.savings.tasks import savings_refresh_task
from dashboard.sessions.tasks import message_words_task
from dashboard.worker.queueing import ingest_job_enqueue, jobs_take_over, refold_run_enqueue

__all__ = [
    "alerts_check_task",
    "analyse_session_task",
    "analyse_sessions_task",
    "fold_session_task",
    "fold_sessions_task",
    "ingest_job_enqueue",
    "ingest_job_task",
    "jobs_take_over",
    "message_words_task",
    "refold_chunk_task",
    "refold_run_enqueue",
    "refold_run_task",
    "savings_refresh_task",
]
