"""Celery tasks, thin over the services: ids in, claim the job, call the service, record progress.

Each task has an explicit name, so routing (``CELERY_TASK_ROUTES``) and messages already queued
survive a module being moved.
"""

from dashboard.tasks.analysis import analyse_session_task
from dashboard.tasks.folds import fold_session_task, refold_chunk_task, refold_run_task
from dashboard.tasks.ingest import ingest_job_task
from dashboard.tasks.queueing import ingest_job_enqueue, jobs_take_over, refold_run_enqueue

__all__ = [
    "analyse_session_task",
    "fold_session_task",
    "ingest_job_enqueue",
    "ingest_job_task",
    "jobs_take_over",
    "refold_chunk_task",
    "refold_run_enqueue",
    "refold_run_task",
]
