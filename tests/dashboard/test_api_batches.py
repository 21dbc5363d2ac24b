"""Background API batches: ``POST /api/v1/batches`` answers 202 with the job to poll, the ingest task
stores the body as the synchronous endpoint would, and only the sending source's token sees the job."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.test.utils import override_settings

from dashboard.access.tokens import token_create
from dashboard.ingest.api import lines as api_ingest
from dashboard.ingest.api import views as api
from dashboard.ingest.api.batches import api_batch_create
from dashboard.ingest.jobs import (
    ingest_job_claim,
    ingest_job_requeue,
    ingest_job_retryable,
    ingest_job_run,
)
from dashboard.jobs.leases import LeaseLost
from dashboard.models import Event, IngestJob, Request, Session, Source
from dashboard.worker.tasks import ingest_job_enqueue, jobs_take_over
from tests.dashboard.logs import dsh_lines
from tests.dashboard.test_api import anthropic_call, ndjson
from tests.dashboard.test_job_queueing import _lapse, broker_down  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db
BATCHES = "/api/v1/batches"
INGEST = "/api/v1/ingest"


def _token(name: str) -> str:
    source = Source.objects.create(name=name)
    _token, value = token_create(source=source, name=f"{name}-host", created_by=None)
    return value


@pytest.fixture
def secret() -> str:
    return _token("farm")


def send(client: Client, secret: str, body: bytes, url: str = BATCHES) -> Any:
    return client.post(
        url, data=body, content_type="application/x-ndjson", headers={"Authorization": f"Bearer {secret}"}
    )


def poll(client: Client, secret: str, location: str) -> Any:
    return client.get(location, headers={"Authorization": f"Bearer {secret}"})


def poll_until_finished(client: Client, secret: str, location: str) -> dict[str, Any]:
    """The batch's status once it is done or failed (tasks run in-process here, so at once)."""
    for _ in range(50):
        answer: dict[str, Any] = poll(client, secret, location).json()
        if answer["status"] in ("done", "failed"):
            return answer
    raise AssertionError(f"the batch at {location} never finished: {answer}")


def mixed_body() -> bytes:
    """Three sessions, a request line, and three bad lines, each naming another field."""
    first = dsh_lines("s1", turns=2)
    first[2] = {**first[2], "seq": "two"}
    first[3] = {key: value for key, value in first[3].items() if key != "data"}
    return ndjson(
        [
            *first,
            anthropic_call("msg_1", read=1000, write=300, session=None),
            *dsh_lines("s2", turns=1),
            {"type": "request", "request": {}, "response": {}},
            *dsh_lines("s3", turns=3),
        ]
    )


def stored_rows(source_name: str) -> dict[str, Any]:
    events = Event.objects.filter(session__source__name=source_name)
    requests = Request.objects.filter(session__source__name=source_name)
    return {
        "events": sorted(events.values_list("session__external_id", "seq", "type")),
        "requests": sorted(
            requests.values_list("session__external_id", "key", "cache_read_tokens", "cache_write_5m_tokens")
        ),
    }


def test_a_batch_is_answered_202_with_the_location_of_its_job(client: Client, secret: str) -> None:
    response = send(client, secret, ndjson(dsh_lines("s1", turns=2)))
    assert response.status_code == 202
    job = IngestJob.objects.get()
    assert job.kind == IngestJob.Kind.API
    assert job.source_name == "farm"
    assert response["Location"] == f"{BATCHES}/{job.pk}"
    assert response.json()["id"] == job.pk


def test_polling_a_batch_gives_the_rows_and_errors_the_synchronous_endpoint_gives(
    client: Client, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two sessions a commit, so the three sessions take several steps.
    monkeypatch.setattr(api_ingest, "STEP_SESSIONS", 2)
    body = mixed_body()
    direct = send(client, _token("farm-sync"), body, url=INGEST).json()
    synced = stored_rows("farm-sync")
    # Gone again, or the batch would find the same logs stored under farm-sync and not store them.
    Session.objects.filter(source__name="farm-sync").delete()

    answer = poll_until_finished(client, secret, send(client, secret, body)["Location"])

    assert answer["status"] == "done"
    assert answer["progress"] == 100
    assert answer["errors"] == direct["errors"]
    assert [(e["line"], e["field"]) for e in answer["errors"][:2]] == [(3, "seq"), (4, "data")]
    assert answer["errors"][2]["field"] == "request.body"
    for key in ("accepted", "duplicates", "duplicate_events", "duplicate_requests", "events", "requests"):
        assert answer[key] == direct[key], key
    assert answer["sessions"] == direct["sessions"] == 3
    assert stored_rows("farm") == synced
    assert ("s1", "msg_1", 1000, 300) in stored_rows("farm")["requests"]


def test_a_finished_batch_leaves_no_body_on_disk(client: Client, secret: str) -> None:
    send(client, secret, ndjson(dsh_lines("s1", turns=1)))
    job = IngestJob.objects.get()
    assert job.status == IngestJob.Status.DONE
    assert job.paths
    assert not any(Path(p).exists() for p in job.paths)


def test_another_source_s_token_gets_404_on_the_batch(client: Client, secret: str) -> None:
    location = send(client, secret, ndjson(dsh_lines("s1", turns=1)))["Location"]
    other = poll(client, _token("elsewhere"), location)
    assert other.status_code == 404
    assert "no batch" in other.json()["error"]
    assert poll(client, secret, location).status_code == 200


def test_an_upload_job_is_not_visible_as_a_batch(client: Client, secret: str) -> None:
    upload = IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="farm")
    assert poll(client, secret, f"{BATCHES}/{upload.pk}").status_code == 404


def test_the_batch_status_needs_a_token(client: Client, secret: str) -> None:
    location = send(client, secret, ndjson(dsh_lines("s1", turns=1)))["Location"]
    response = client.get(location)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_body_over_the_batch_limit_is_refused_with_413_and_leaves_nothing(
    client: Client, secret: str, settings: Any
) -> None:
    body = ndjson(dsh_lines("s1", turns=20))
    uploads = Path(settings.DATA_DIR) / "uploads"

    def kept() -> set[Path]:
        # What earlier tests left in the shared data folder is theirs: only a new file is this one's.
        return set(uploads.rglob("*")) if uploads.exists() else set()

    before = kept()
    with override_settings(CACHESCOPE_API_BATCH_MAX_BYTES=1024):
        response = send(client, secret, body)
    assert response.status_code == 413
    assert "1024 bytes" in response.json()["error"]
    assert not IngestJob.objects.exists()
    assert kept() == before


def test_a_body_over_the_synchronous_limit_is_taken_as_a_batch(client: Client, secret: str) -> None:
    body = ndjson(dsh_lines("s1", turns=20))
    with override_settings(CACHESCOPE_API_MAX_BYTES=1024, CACHESCOPE_API_BATCH_MAX_BYTES=len(body)):
        assert send(client, secret, body, url=INGEST).status_code == 413
        response = send(client, secret, body)
    assert response.status_code == 202
    assert poll_until_finished(client, secret, response["Location"])["events"] == len(body.splitlines()) - 1


def test_a_batch_with_more_sessions_than_allowed_fails_its_job_and_stores_nothing(
    client: Client, secret: str
) -> None:
    body = ndjson([*dsh_lines("s1", turns=1), *dsh_lines("s2", turns=1)])
    with override_settings(CACHESCOPE_API_BATCH_MAX_SESSIONS=1):
        response = send(client, secret, body)
    assert response.status_code == 202
    answer = poll_until_finished(client, secret, response["Location"])
    assert answer["status"] == "failed"
    assert "more than 1 sessions" in answer["message"]
    assert not Event.objects.exists()


def test_an_empty_batch_is_refused_with_400(client: Client, secret: str) -> None:
    assert send(client, secret, b"").status_code == 400
    assert not IngestJob.objects.exists()


def test_sending_the_same_batch_again_adds_nothing(client: Client, secret: str) -> None:
    body = ndjson([*dsh_lines("s1", turns=2), anthropic_call("msg_1", read=0, write=2000)])
    first = poll_until_finished(client, secret, send(client, secret, body)["Location"])
    second = poll_until_finished(client, secret, send(client, secret, body)["Location"])
    assert first["accepted"] == 6
    assert (second["accepted"], second["duplicates"]) == (0, 6)
    assert (second["duplicate_events"], second["duplicate_requests"]) == (5, 1)
    assert Event.objects.count() == 5
    assert Request.objects.count() == 1


def test_the_batches_endpoint_takes_only_post_and_the_status_only_get(client: Client, secret: str) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    listing = client.get(BATCHES, headers=headers)
    assert (listing.status_code, listing["Allow"]) == (405, "POST")
    location = send(client, secret, ndjson(dsh_lines("s1", turns=1)))["Location"]
    changed = client.post(location, headers=headers)
    assert (changed.status_code, changed["Allow"]) == (405, "GET")


@pytest.mark.usefixtures("broker_down")
def test_with_the_broker_down_a_batch_is_refused_with_503_before_its_body_is_read(
    client: Client, secret: str
) -> None:
    response = send(client, secret, ndjson(dsh_lines("s1", turns=1)))
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert not IngestJob.objects.exists()


@pytest.mark.usefixtures("broker_down")
def test_a_broker_that_refuses_the_task_leaves_the_batch_not_queued_and_answers_503(
    client: Client, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The broker answered the check, then refused the task: the job is kept, marked not queued.
    monkeypatch.setattr(api, "broker_reachable", lambda: True)
    response = send(client, secret, ndjson(dsh_lines("s1", turns=1)))
    assert response.status_code == 503
    assert "send it again" in response.json()["error"]
    answer = poll(client, secret, response["Location"]).json()
    assert answer["status"] == "not_queued"
    assert "broker did not answer" in answer["message"]
    job = IngestJob.objects.get()
    assert job.paths == []
    assert not Event.objects.exists()


def test_a_batch_whose_worker_died_is_taken_over_by_the_sweep_and_stored(secret: str) -> None:
    body = ndjson(dsh_lines("orphan", turns=2))
    job = api_batch_create(
        stream=io.BytesIO(body),
        content_length=len(body),
        content_encoding="",
        source=Source.objects.get(name="farm"),
        label="batch",
    )
    _lapse(job)
    assert jobs_take_over() == 1
    job.refresh_from_db()
    assert job.status == IngestJob.Status.DONE, job.message
    assert job.claimed_by != "a-dead-worker"
    assert Event.objects.filter(session__external_id="orphan").count() == 5


def test_a_failed_batch_keeps_its_body_and_an_operator_retry_stores_it(client: Client, secret: str) -> None:
    body = ndjson([*dsh_lines("s1", turns=1), *dsh_lines("s2", turns=1)])
    with override_settings(CACHESCOPE_API_BATCH_MAX_SESSIONS=1):
        location = send(client, secret, body)["Location"]
    job = IngestJob.objects.get()
    assert job.status == IngestJob.Status.FAILED
    assert ingest_job_retryable(job)
    assert ingest_job_requeue(job_id=job.pk)
    assert ingest_job_enqueue(job.pk)
    answer = poll_until_finished(client, secret, location)
    assert (answer["status"], answer["sessions"]) == ("done", 2)


def test_a_batch_s_progress_moves_as_each_step_of_sessions_is_committed(
    secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_ingest, "STEP_SESSIONS", 2)
    body = ndjson([line for name in ("a", "b", "c", "d", "e") for line in dsh_lines(name, turns=1)])
    job = api_batch_create(
        stream=io.BytesIO(body),
        content_length=len(body),
        content_encoding="",
        source=Source.objects.get(name="farm"),
        label="batch",
    )
    assert ingest_job_claim(job_id=job.pk, owner="worker-1")
    seen: list[int] = []
    ingest_job_run(job_id=job.pk, owner="worker-1", on_progress=lambda running: seen.append(running.percent))
    # Five sessions in steps of two: 2/5, 4/5, then all of them (a running job shows at most 99).
    assert seen == [40, 80, 99]
    job.refresh_from_db()
    assert (job.status, job.percent, job.sessions_added) == (IngestJob.Status.DONE, 100, 5)


def test_a_batch_taken_over_midway_answers_every_session_accepted_and_none_duplicate(
    client: Client, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_ingest, "STEP_SESSIONS", 2)
    body = ndjson([line for name in ("a", "b", "c", "d") for line in dsh_lines(name, turns=2)])
    job = api_batch_create(
        stream=io.BytesIO(body),
        content_length=len(body),
        content_encoding="",
        source=Source.objects.get(name="farm"),
        label="batch",
    )
    assert ingest_job_claim(job_id=job.pk, owner="worker-1")

    def killed_after_the_first_step(running: IngestJob) -> None:
        raise LeaseLost("the worker stalled and its job was taken over")

    with pytest.raises(LeaseLost):
        ingest_job_run(job_id=job.pk, owner="worker-1", on_progress=killed_after_the_first_step)
    assert IngestJob.objects.get(pk=job.pk).events_added == 10  # the first step's, committed
    _lapse(job)
    assert jobs_take_over() == 1

    answer = poll(client, secret, f"{BATCHES}/{job.pk}").json()
    assert (answer["status"], answer["sessions"], answer["accepted"], answer["duplicates"]) == (
        "done",
        4,
        20,
        0,
    )
    assert Event.objects.count() == 20
