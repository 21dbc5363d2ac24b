"""Jobs whose task the broker refused are marked not queued and retried from their page; jobs whose
worker died are queued again by the sweep."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import FoldRun, IngestJob, Session, SessionAnalysis
from dashboard.worker.tasks import jobs_take_over
from tests.dashboard.test_faults import _point_at
from tests.dashboard.test_uploads import log_bytes, upload, zipped

pytestmark = pytest.mark.django_db(transaction=True)

NOBODY_LISTENS = "redis://127.0.0.1:1/0"
"""Port 1 has no broker: every send is refused at once."""


@pytest.fixture
def broker_down() -> Iterator[Callable[[], None]]:
    """Tasks go to a broker that is down until the returned function brings them back in-process."""
    from dashboard.celery import app

    saved = app.conf.task_always_eager, app.conf.broker_url, app.conf.broker_transport_options

    def back() -> None:
        app.conf.broker_transport_options = saved[2]
        _point_at(app, saved[1])
        app.conf.task_always_eager = True

    app.conf.task_always_eager = False
    app.conf.broker_transport_options = {"max_retries": 0}
    _point_at(app, NOBODY_LISTENS)
    try:
        yield back
    finally:
        back()
        app.conf.task_always_eager = saved[0]


def test_an_upload_with_the_broker_down_is_marked_not_queued_instead_of_a_server_error(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    response = upload(operator_client, "session.jsonl", log_bytes("later"))
    job = IngestJob.objects.get()
    assert response.status_code == 302
    assert job.status == IngestJob.Status.NOT_QUEUED
    assert "broker did not answer" in job.message
    page = operator_client.get(job.get_absolute_url()).content.decode()
    assert "not queued" in page
    assert "Retry this ingest" in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_retrying_a_not_queued_upload_once_the_broker_is_back_ingests_it(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    upload(operator_client, "logs.zip", zipped({"a/session.jsonl": log_bytes("later")}))
    job = IngestJob.objects.get()
    retry = reverse("dashboard:ingest_job_retry", args=[job.pk])
    operator_client.post(retry)  # still down: stays not queued, no 500
    assert IngestJob.objects.get(pk=job.pk).status == IngestJob.Status.NOT_QUEUED
    broker_down()
    assert operator_client.post(retry).status_code == 302
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert list(Session.objects.values_list("external_id", flat=True)) == ["later"]
    assert job.paths
    assert not any(Path(p).exists() for p in job.paths)
    assert operator_client.post(retry).status_code == 302  # a done job is not run again
    assert IngestJob.objects.get(pk=job.pk).events_added == job.events_added


def test_a_viewer_cannot_retry_an_ingest(
    operator_client: Client, viewer_client: Client, broker_down: Callable[[], None]
) -> None:
    upload(operator_client, "session.jsonl", log_bytes("later"))
    job = IngestJob.objects.get()
    broker_down()
    assert viewer_client.post(reverse("dashboard:ingest_job_retry", args=[job.pk])).status_code == 403
    assert IngestJob.objects.get(pk=job.pk).status == IngestJob.Status.NOT_QUEUED
    assert "Retry this ingest" not in viewer_client.get(job.get_absolute_url()).content.decode()


def test_a_refold_started_with_the_broker_down_is_not_queued_and_resumes_from_its_page(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    form = {"comparison": "contextBreakdown:7:8"}
    response = operator_client.post(reverse("dashboard:projections"), form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    run = FoldRun.objects.get()
    assert run.status == FoldRun.Status.NOT_QUEUED
    page = operator_client.get(run.get_absolute_url()).content.decode()
    assert "broker did not answer" in page
    assert "Resume re-fold" in page
    broker_down()
    operator_client.post(run.get_absolute_url())
    assert FoldRun.objects.get(pk=run.pk).status == FoldRun.Status.DONE


def _lapse(job: IngestJob) -> None:
    IngestJob.objects.filter(pk=job.pk).update(
        status=IngestJob.Status.RUNNING,
        claimed_by="a-dead-worker",
        lease_until=timezone.now() - timedelta(seconds=1),
    )


def test_the_sweep_queues_again_an_upload_whose_worker_died(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    upload(operator_client, "session.jsonl", log_bytes("orphan"))
    job = IngestJob.objects.get()
    broker_down()
    _lapse(job)
    assert jobs_take_over() == 1
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert job.claimed_by != "a-dead-worker"
    assert jobs_take_over() == 0


def test_the_sweep_leaves_a_live_lease_alone(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    upload(operator_client, "session.jsonl", log_bytes("busy"))
    job = IngestJob.objects.get()
    broker_down()
    IngestJob.objects.filter(pk=job.pk).update(
        status=IngestJob.Status.RUNNING,
        claimed_by="a-live-worker",
        lease_until=timezone.now() + timedelta(minutes=1),
    )
    assert jobs_take_over() == 0
    assert IngestJob.objects.get(pk=job.pk).claimed_by == "a-live-worker"


def test_the_sweep_fails_a_command_ingest_whose_process_died(tmp_path: Path) -> None:
    job = IngestJob.objects.create(kind=IngestJob.Kind.COMMAND, paths=[str(tmp_path)])
    _lapse(job)
    assert jobs_take_over() == 0
    job.refresh_from_db()
    assert job.status == IngestJob.Status.FAILED
    assert "stopped before it finished" in job.message


def test_the_sweep_runs_again_an_analysis_whose_worker_died(operator_client: Client) -> None:
    with_broker_in_process = upload(operator_client, "session.jsonl", log_bytes("analysed"))
    assert with_broker_in_process.status_code == 302
    session = Session.objects.get()
    SessionAnalysis.objects.filter(session=session).update(
        status=SessionAnalysis.Status.RUNNING,
        claimed_by="a-dead-worker",
        lease_until=timezone.now() - timedelta(seconds=1),
    )
    assert jobs_take_over() == 1
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == SessionAnalysis.Status.DONE
    assert analysis.claimed_by != "a-dead-worker"


def test_the_refold_command_with_the_broker_down_says_so_and_leaves_the_run_not_queued(
    broker_down: Callable[[], None],
) -> None:
    with pytest.raises(CommandError, match="not queued; carry it on with --resume"):
        call_command("refold", "--key", "contextBreakdown", "--from", "7", "--to", "8", "--async")
    assert FoldRun.objects.get().status == FoldRun.Status.NOT_QUEUED


def test_the_progress_of_a_not_queued_job_stops_polling_and_keeps_its_retry_button(
    operator_client: Client, broker_down: Callable[[], None]
) -> None:
    upload(operator_client, "session.jsonl", log_bytes("later"))
    job = IngestJob.objects.get()
    fragment = operator_client.get(job.get_absolute_url(), headers={"HX-Request": "true"})
    assert fragment.status_code == 286  # htmx: stop polling
    assert "Retry this ingest" in fragment.content.decode()
