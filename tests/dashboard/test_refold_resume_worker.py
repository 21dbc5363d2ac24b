"""A re-fold run taken over from a dead worker goes on at once, not after the chunks of the later
runs waiting on the refold queue: checked with a real worker on a real broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu import Connection

from dashboard.models import FoldRun
from dashboard.refold.runs import fold_run_resume
from dashboard.refold.tasks import RESUME_QUEUE
from dashboard.worker.queueing import refold_run_enqueue
from tests.dashboard.test_faults import _point_at
from tests.dashboard.test_refold_resume import failed_run
from tests.dashboard.workers import broker_or_skip, send_task, wait_for, worker_process

LATER_CHUNKS = 40


@pytest.fixture
def sent_to_broker() -> Iterator[str]:
    """The app's tasks go to the test broker rather than run in-process, for this test."""
    from dashboard.celery import app

    broker = broker_or_skip()
    saved = app.conf.task_always_eager, app.conf.broker_url
    app.conf.task_always_eager = False
    _point_at(app, broker)
    try:
        yield broker
    finally:
        _point_at(app, saved[1])
        app.conf.task_always_eager = saved[0]


def waiting(broker: str, queue: str) -> int:
    """Messages waiting on ``queue`` (a queue nothing was sent to holds none)."""
    with Connection(broker) as conn:
        try:
            return int(conn.default_channel.queue_declare(queue=queue, passive=True).message_count)
        except conn.channel_errors:
            return 0


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_resumed_run_finishes_while_later_runs_chunks_wait_on_the_refold_queue(
    tmp_path: Path, sent_to_broker: str
) -> None:
    broker = sent_to_broker
    run = failed_run()
    # Chunks of runs started after it, queued where its own task and chunks would go otherwise.
    for chunk in range(LATER_CHUNKS):
        send_task("dashboard.tasks.refold_chunk", [run.pk + 1, [chunk]], broker=broker, queue="refold")
    fold_run_resume(run_id=run.pk)
    assert refold_run_enqueue(run.pk, resume=True)
    assert waiting(broker, RESUME_QUEUE) == 1

    # A worker that serves only the resume queue finishes the run: nothing of it waits on refold.
    with worker_process(tmp_path / "worker.log", broker=broker, queues=RESUME_QUEUE):
        wait_for(lambda: FoldRun.objects.get(pk=run.pk).is_finished, timeout=120)
    finished = FoldRun.objects.get(pk=run.pk)
    assert finished.status == FoldRun.Status.DONE, finished.message
    assert finished.sessions_total > 0
    assert waiting(broker, "refold") == LATER_CHUNKS
