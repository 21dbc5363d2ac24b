"""An ingest job's claim (on its queryset) and its run (in the service), as every entry point uses them."""

from __future__ import annotations

import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from dashboard.ingest import files as ingest_files
from dashboard.ingest import jobs as ingest_jobs
from dashboard.ingest.jobs import ingest_job_run
from dashboard.jobs.leases import Heartbeat, LeaseLost
from dashboard.models import IngestJob, Session
from tests.dashboard.logs import write_dsh_log

LEASE = 30


def queued_job(log: Path) -> IngestJob:
    folder = Path(settings.DATA_DIR) / "uploads-test" / log.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(log, folder / "session.jsonl")
    return IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(folder)])


@pytest.mark.django_db
def test_claiming_a_queued_job_sets_it_running_for_its_owner(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    job.refresh_from_db()
    assert (job.status, job.claimed_by) == ("running", "task-a")
    assert job.started_at is not None


@pytest.mark.django_db
def test_a_job_held_by_another_owner_cannot_be_claimed(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert not IngestJob.objects.claim(job_id=job.pk, owner="task-b", lease_seconds=LEASE)
    assert IngestJob.objects.get(pk=job.pk).claimed_by == "task-a"


@pytest.mark.django_db
def test_a_live_lease_is_not_claimed_again_even_by_a_second_delivery_of_the_same_task(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert not IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)


@pytest.mark.django_db
def test_a_lapsed_lease_is_taken_over_and_its_progress_restarts(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    IngestJob.objects.filter(pk=job.pk).update(
        bytes_done=123, lease_until=timezone.now() - timedelta(seconds=1)
    )
    assert list(IngestJob.objects.lapsed().values_list("pk", flat=True)) == [job.pk]
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-b", lease_seconds=LEASE)
    job.refresh_from_db()
    assert (job.claimed_by, job.bytes_done) == ("task-b", 0)
    assert job.lease_until is not None
    assert job.lease_until > timezone.now()


@pytest.mark.django_db
def test_only_the_holder_renews_a_lease(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert IngestJob.objects.renew(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert not IngestJob.objects.renew(job_id=job.pk, owner="task-b", lease_seconds=LEASE)


def test_a_heartbeat_whose_renewal_fails_stops_the_job_at_its_next_check() -> None:
    renewals: list[bool] = []

    def renew() -> bool:
        renewals.append(False)
        return False

    with Heartbeat(renew, seconds=1) as heartbeat:
        heartbeat.check()  # the first renewal is a third of a lease away
        deadline = time.monotonic() + 5
        while not heartbeat.lost and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(LeaseLost):
            heartbeat.check()
    assert renewals == [False]


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["done", "failed"])
def test_a_finished_job_cannot_be_claimed(dsh_log: Path, status: str) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.filter(pk=job.pk).update(status=status)
    assert not IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert IngestJob.objects.get(pk=job.pk).status == status


@pytest.mark.django_db
def test_a_run_records_its_progress_file_by_file_and_its_counts(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    seen: list[tuple[int, int]] = []

    def record(current: IngestJob) -> None:
        seen.append((current.bytes_done, current.bytes_total))

    ingest_job_run(job_id=job.pk, owner="task-a", on_progress=record)
    job.refresh_from_db()
    assert (job.status, job.sessions_added, job.events_added) == ("done", 1, 5)
    assert job.bytes_done == job.bytes_total == dsh_log.stat().st_size
    assert seen == [(job.bytes_total, job.bytes_total)]


@pytest.mark.django_db
def test_a_folder_of_many_files_writes_its_progress_at_most_twice_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = Path(settings.DATA_DIR) / "uploads-test" / "many"
    for name in ("s1", "s2", "s3"):
        write_dsh_log(folder / name / "session.jsonl", session_id=name, turns=1)
    job = IngestJob.objects.create(kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(folder)])
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    stored: list[int] = []

    def record(current: IngestJob) -> None:
        stored.append(IngestJob.objects.get(pk=job.pk).bytes_done)

    monkeypatch.setattr(ingest_jobs, "PROGRESS_SECONDS", 3600.0)
    ingest_job_run(job_id=job.pk, owner="task-a", on_progress=record)
    job.refresh_from_db()
    # The first file's progress is written at once; the next two wait for the half second (here an
    # hour) to pass, and the job's end writes the total.
    assert len(stored) == 3
    assert stored[0] == stored[1] == stored[2] > 0
    assert stored[0] < job.bytes_done == job.bytes_total


@pytest.mark.django_db
def test_a_run_that_breaks_records_the_failure_on_the_job_and_raises_it(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.filter(pk=job.pk).update(paths=[42])  # a row no upload could have written
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    with pytest.raises(TypeError):
        ingest_job_run(job_id=job.pk, owner="task-a")
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.message.startswith("TypeError: ")
    assert job.finished_at is not None
    assert not Session.objects.exists()


@pytest.mark.django_db
def test_a_failure_names_an_uploaded_file_without_the_server_s_upload_folder(
    dsh_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued_job(dsh_log)
    [folder] = job.paths

    def disk_full(**_: object) -> None:
        raise OSError(f"[Errno 28] No space left on device: '{folder}/session.jsonl'")

    monkeypatch.setattr("dashboard.ingest.files.ingest_paths", disk_full)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    with pytest.raises(OSError, match="No space left"):
        ingest_job_run(job_id=job.pk, owner="task-a")
    job.refresh_from_db()
    assert job.message == "OSError: [Errno 28] No space left on device: 'session.jsonl'"


def test_a_heartbeat_that_meets_a_database_error_keeps_its_lease_and_tries_again() -> None:
    calls: list[str] = []

    def renew() -> bool:
        calls.append("renew")
        if len(calls) == 1:
            raise OperationalError("the database is restarting")
        return True

    with Heartbeat(renew, seconds=1) as heartbeat:
        deadline = time.monotonic() + 5
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(calls) >= 2
    assert not heartbeat.lost
    heartbeat.check()


@pytest.mark.django_db
def test_a_database_error_gives_the_job_back_so_the_task_s_retry_runs_it_at_once(
    dsh_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.ingest import files as ingest
    from dashboard.worker.tasks import ingest_job_task

    job = queued_job(dsh_log)
    real_ingest_paths = ingest.ingest_paths
    attempts: list[str] = []

    def locked_once(**kwargs: object) -> object:
        attempts.append(IngestJob.objects.get(pk=job.pk).claimed_by)
        if len(attempts) == 1:
            raise OperationalError("database is locked")
        return real_ingest_paths(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("dashboard.ingest.files.ingest_paths", locked_once)
    # Applied in-process, the autoretry runs at once, within the first attempt's lease: held, the job
    # would be refused to the retry (a new owner) and wait for the sweep.
    ingest_job_task.apply(args=[job.pk], throw=False)
    job.refresh_from_db()
    assert len(attempts) == 2
    assert attempts[0] != attempts[1]
    assert job.status == IngestJob.Status.DONE, job.message
    assert Session.objects.count() == 1


@pytest.mark.django_db
def test_only_the_owner_of_a_running_job_can_give_it_back(dsh_log: Path) -> None:
    job = queued_job(dsh_log)
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    assert not IngestJob.objects.release(job_id=job.pk, owner="task-b")
    assert IngestJob.objects.get(pk=job.pk).claimed_by == "task-a"
    assert IngestJob.objects.release(job_id=job.pk, owner="task-a")
    job.refresh_from_db()
    assert (job.status, job.claimed_by, job.lease_until) == ("queued", "", None)


def _four_sessions(root: Path) -> Path:
    folder = Path(settings.DATA_DIR) / "uploads-test" / root.name
    for name in ("a", "b", "c", "d"):
        write_dsh_log(folder / name / "session.jsonl", session_id=name, turns=2)
    return folder


def _stopped_after_its_first_commit(job: IngestJob, owner: str) -> None:
    """Run the job until its second group, then stop as a worker whose lease was taken over."""
    finished: list[int] = []

    def stop_in_the_second_group(current: IngestJob) -> None:
        finished.append(current.bytes_done)
        if len(finished) == 3:  # the third file: the first group (a, b) has committed
            raise LeaseLost("taken over")

    with pytest.raises(LeaseLost):
        ingest_job_run(job_id=job.pk, owner=owner, on_progress=stop_in_the_second_group)


@pytest.mark.django_db
def test_a_job_s_row_counts_what_it_committed_before_its_worker_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_files, "GROUP_SESSIONS", 2)
    job = IngestJob.objects.create(
        kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(_four_sessions(tmp_path))]
    )
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)

    _stopped_after_its_first_commit(job, "task-a")

    job.refresh_from_db()
    assert (job.status, job.sessions_added, job.events_added) == ("running", 2, 10)
    assert sorted(job.sessions.values_list("external_id", flat=True)) == ["a", "b"]
    assert Session.objects.count() == 2


@pytest.mark.django_db
def test_a_job_taken_over_counts_across_its_attempts_and_calls_none_of_its_own_rows_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_files, "GROUP_SESSIONS", 2)
    job = IngestJob.objects.create(
        kind=IngestJob.Kind.UPLOAD, source_name="laptop", paths=[str(_four_sessions(tmp_path))]
    )
    IngestJob.objects.claim(job_id=job.pk, owner="task-a", lease_seconds=LEASE)
    _stopped_after_its_first_commit(job, "task-a")
    IngestJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert IngestJob.objects.claim(job_id=job.pk, owner="task-b", lease_seconds=LEASE)

    summary = ingest_job_run(job_id=job.pk, owner="task-b")

    job.refresh_from_db()
    assert (summary.sessions_added, summary.sessions_unchanged, summary.duplicates) == (4, 0, 0)
    assert (job.status, job.sessions_added, job.events_added, job.duplicates) == ("done", 4, 20, 0)
    assert (job.claimed_by, job.sessions.count()) == ("task-b", 4)


@pytest.mark.django_db
def test_a_lapsed_command_job_keeps_its_counts_and_names_no_dead_owner(tmp_path: Path) -> None:
    job = IngestJob.objects.create(
        kind=IngestJob.Kind.COMMAND, source_name="laptop", paths=[str(tmp_path)], events_added=6884
    )
    IngestJob.objects.claim(job_id=job.pk, owner="command:4242", lease_seconds=LEASE)
    IngestJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    assert ingest_jobs.ingest_jobs_release_lapsed() == []

    job.refresh_from_db()
    assert (job.status, job.events_added, job.claimed_by, job.lease_until) == ("failed", 6884, "", None)
    assert "what it had stored is counted here and kept" in job.message
