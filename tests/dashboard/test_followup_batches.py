"""Follow-ups in batches: an ingest of many sessions enqueues their folds and analyses together, and
the batch tasks fold and analyse them in a few queries and commits rather than a dozen a session."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import dashboard.worker.tasks  # noqa: F401  (registers the follow-ups)
from dashboard.analysis import stored_sessions as analysis_service
from dashboard.analysis.stored_sessions import analyses_claim, analyses_request, sessions_analyse
from dashboard.ingest import followups
from dashboard.ingest.files import ingest_paths
from dashboard.models import (
    PendingFollowup,
    ProjectionRow,
    RequestAnalysis,
    Session,
    SessionAnalysis,
    Source,
)
from dashboard.refold import folds
from dashboard.refold.folds import fold_sessions
from dashboard.worker.tasks import analyse_sessions_task
from projections.folds.registry import live_projections
from tests.dashboard.logs import write_dsh_log
from tests.dashboard.postgres import other_connection
from tests.dashboard.test_analysis import START, usage_row

pytestmark = pytest.mark.django_db

# The ingests below commit for real (transaction=True): follow-ups run once a session commits.


def folder_of_logs(root: Path, *names: str) -> Path:
    for name in names:
        write_dsh_log(root / name / "session.jsonl", session_id=name, turns=2)
    return root


def recorded_followups(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Replace the follow-ups by one that records the batches it is given."""
    batches: list[list[int]] = []
    monkeypatch.setattr(followups, "_FOLLOWUP_MODULES", [])
    monkeypatch.setattr(followups, "_FOLLOWUPS", [lambda ids: batches.append(list(ids))])
    return batches


@pytest.mark.django_db(transaction=True)
def test_a_folder_ingest_enqueues_its_sessions_follow_ups_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = recorded_followups(monkeypatch)
    ingest_paths(paths=[folder_of_logs(tmp_path, "s1", "s2", "s3")], source_name="farm")
    assert batches == [sorted(Session.objects.values_list("pk", flat=True))]
    assert not PendingFollowup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_large_ingest_enqueues_a_batch_whenever_one_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = recorded_followups(monkeypatch)
    monkeypatch.setattr(followups, "FOLLOWUP_BATCH", 2)
    ingest_paths(paths=[folder_of_logs(tmp_path, "s1", "s2", "s3")], source_name="farm")
    ids = sorted(Session.objects.values_list("pk", flat=True))
    assert batches == [ids[:2], ids[2:]]
    assert not PendingFollowup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_ingest_stopped_by_an_error_leaves_what_it_gathered_to_the_resend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = recorded_followups(monkeypatch)

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("dashboard.ingest.files.link_parents", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ingest_paths(paths=[folder_of_logs(tmp_path, "s1", "s2")], source_name="farm")
    assert batches == []
    ids = sorted(Session.objects.values_list("pk", flat=True))
    assert sorted(PendingFollowup.objects.values_list("session_id", flat=True)) == ids


@pytest.mark.django_db(transaction=True)
def test_a_folder_ingest_folds_and_analyses_every_session(tmp_path: Path) -> None:
    ingest_paths(paths=[folder_of_logs(tmp_path, "s1", "s2", "s3")], source_name="farm")
    for session in Session.objects.all():
        assert ProjectionRow.objects.filter(session=session).count() == len(live_projections())
        analysis = SessionAnalysis.objects.get(session=session)
        assert (analysis.status, analysis.requests_done) == ("done", session.requests.count())


def stored_sessions(tmp_path: Path, *names: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sessions ingested with their follow-ups held back, as a worker would find them."""
    with monkeypatch.context() as held:
        recorded_followups(held)
        ingest_paths(paths=[folder_of_logs(tmp_path, *names)], source_name="farm")
    return sorted(Session.objects.values_list("pk", flat=True))


def test_folding_sessions_together_reads_each_log_once_and_writes_them_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, *others = stored_sessions(tmp_path, "s1", "s2", "s3", "s4", monkeypatch=monkeypatch)
    with CaptureQueriesContext(connection) as alone:
        fold_sessions(session_ids=[one])
    ProjectionRow.objects.all().delete()
    with CaptureQueriesContext(connection) as together:
        results = fold_sessions(session_ids=[one, *others, one])
    # Every other session costs the read of its log, and nothing else: nobody else is writing them,
    # so all are written in the one transaction.
    assert len(together) == len(alone) + len(others)
    assert [result.session_id for result in results] == [one, *others]  # the repeat folded once
    for session_id in (one, *others):
        assert ProjectionRow.objects.filter(session_id=session_id).count() == len(live_projections())


def test_one_session_whose_fold_fails_leaves_the_others_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, *fine = stored_sessions(tmp_path, "s1", "s2", "s3", monkeypatch=monkeypatch)
    records = folds.session_records

    def unreadable(*, session_id: int, **kwargs: Any) -> Any:
        if session_id == broken:
            raise ValueError("a log the fold cannot read")
        return records(session_id=session_id, **kwargs)

    monkeypatch.setattr(folds, "session_records", unreadable)
    with pytest.raises(ValueError, match="a log the fold cannot read"):
        fold_sessions(session_ids=[broken, *fine])
    assert not ProjectionRow.objects.filter(session_id=broken).exists()
    for session_id in fine:
        assert ProjectionRow.objects.filter(session_id=session_id).count() == len(live_projections())


@pytest.mark.django_db(transaction=True)
def test_a_session_stored_twice_in_one_ingest_is_folded_and_analysed_once(tmp_path: Path) -> None:
    folder_of_logs(tmp_path / "a", "s1", "s2")
    folder_of_logs(tmp_path / "b", "s1")  # the same log in a second folder
    ingest_paths(paths=[tmp_path / "a", tmp_path / "b"], source_name="farm")
    for session in Session.objects.all():
        assert ProjectionRow.objects.filter(session=session).count() == len(live_projections())
        assert SessionAnalysis.objects.get(session=session).status == "done"
    assert not PendingFollowup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_ingest_stopped_by_an_unexpected_error_still_enqueues_what_it_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = recorded_followups(monkeypatch)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug after the sessions were stored")

    monkeypatch.setattr("dashboard.ingest.files.link_parents", broken)
    with pytest.raises(RuntimeError):
        ingest_paths(paths=[folder_of_logs(tmp_path, "s1", "s2")], source_name="farm")
    assert batches == [sorted(Session.objects.values_list("pk", flat=True))]


def test_folding_sessions_passes_over_one_that_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (kept,) = stored_sessions(tmp_path, "s1", monkeypatch=monkeypatch)
    gone, folded = fold_sessions(session_ids=[kept + 100, kept])
    assert gone.skipped == "the session no longer exists"
    assert folded.events_folded > 0
    assert not folded.skipped


def transcript_session(source: Source, name: str) -> Session:
    """A transcript session of two calls, analysed from their usage alone."""
    session = Session.objects.create(source=source, external_id=name, format="claude-code")
    for ordinal in range(2):
        usage_row(session, ordinal, START + timedelta(minutes=ordinal), 12_000 * ordinal, 12_000)
    return session


def test_a_batch_claims_only_the_analyses_no_live_lease_holds() -> None:
    source = Source.objects.create(name="laptop")
    first, held, gone = (transcript_session(source, name) for name in ("a", "b", "c"))
    gone_id = gone.pk
    gone.delete()
    assert analyses_request(session_ids=[first.pk, held.pk, gone_id]) == [first.pk, held.pk]
    SessionAnalysis.objects.filter(session=held).update(
        status=SessionAnalysis.Status.RUNNING,
        claimed_by="task-a",
        lease_until=timezone.now() + timedelta(minutes=5),
    )
    assert analyses_claim(session_ids=[first.pk, held.pk], owner="task-b") == [first.pk]
    claimed = SessionAnalysis.objects.get(session=first)
    assert (claimed.status, claimed.claimed_by, claimed.requests_total) == ("running", "task-b", 2)
    assert SessionAnalysis.objects.get(session=held).claimed_by == "task-a"


def test_a_batch_asked_again_queues_each_analysis_anew() -> None:
    source = Source.objects.create(name="laptop")
    sessions = [transcript_session(source, name) for name in ("a", "b")]
    ids = [session.pk for session in sessions]
    analyses_request(session_ids=ids)
    analyses_request(session_ids=ids)
    assert sorted(SessionAnalysis.objects.values_list("status", "generation")) == [("queued", 2)] * 2


def test_one_failed_analysis_leaves_the_others_of_its_batch_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    source = Source.objects.create(name="laptop")
    broken, fine = transcript_session(source, "broken"), transcript_session(source, "fine")
    engine = analysis_service.analyse_records
    calls: list[int] = []

    def breaks_on_the_first(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # the batch is analysed in the order given: the broken session first
            raise ValueError("the engine broke")
        return engine(*args, **kwargs)

    monkeypatch.setattr(analysis_service, "analyse_records", breaks_on_the_first)
    analyses_request(session_ids=[broken.pk, fine.pk])
    with pytest.raises(ValueError, match="the engine broke"):
        analyse_sessions_task.delay([broken.pk, fine.pk])
    assert SessionAnalysis.objects.get(session=broken).status == "failed"
    assert SessionAnalysis.objects.get(session=fine).status == "done"
    assert RequestAnalysis.objects.filter(session=fine).count() == 2


def test_a_database_error_queues_again_the_claims_not_yet_analysed(monkeypatch: pytest.MonkeyPatch) -> None:
    source = Source.objects.create(name="laptop")
    first, second = transcript_session(source, "a"), transcript_session(source, "b")
    analyses_request(session_ids=[first.pk, second.pk])
    assert analyses_claim(session_ids=[first.pk, second.pk], owner="task-a") == [first.pk, second.pk]

    def away(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(analysis_service, "analyse_records", away)
    with pytest.raises(OperationalError):
        sessions_analyse(session_ids=[first.pk, second.pk], owner="task-a")
    waiting = SessionAnalysis.objects.get(session=second)
    assert (waiting.status, waiting.claimed_by) == ("queued", "")
    assert analyses_claim(session_ids=[second.pk], owner="task-b") == [second.pk]


def test_a_session_deleted_while_it_was_folded_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone, kept = stored_sessions(tmp_path, "s1", "s2", monkeypatch=monkeypatch)
    fold = folds._fold_tracks

    def deleted_meanwhile(session_id: int, rows: Any) -> Any:
        tracks = fold(session_id, rows)
        if session_id == gone:
            Session.objects.filter(pk=gone).delete()
        return tracks

    monkeypatch.setattr(folds, "_fold_tracks", deleted_meanwhile)
    skipped, folded = fold_sessions(session_ids=[gone, kept])
    assert skipped.skipped == "the session no longer exists"
    assert folded.events_folded > 0
    assert ProjectionRow.objects.filter(session_id=kept).count() == len(live_projections())


@pytest.mark.django_db(transaction=True)
def test_a_session_another_writer_holds_is_written_once_it_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite's writers take turns")
    held, free = stored_sessions(tmp_path, "s1", "s2", monkeypatch=monkeypatch)
    other = other_connection()
    try:
        # Another writer (an ingest of s1) holds its session; the fold writes s2 at once, then waits
        # for s1 holding no lock of its own, and writes it once the other lets go.
        other.execute("SELECT 1 FROM dashboard_session WHERE id = %s FOR NO KEY UPDATE", [held])
        write = folds._fold_write
        written: list[list[int]] = []

        def let_go_after_the_free_ones(items: Any) -> None:
            written.append([item.session.pk for item in items])
            write(items)
            if written == [[free]]:
                other.rollback()

        monkeypatch.setattr(folds, "_fold_write", let_go_after_the_free_ones)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a fold that waits with s1 held fails, not hangs
        fold_sessions(session_ids=[held, free])
    finally:
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert written == [[free], [held]]
    for session_id in (held, free):
        assert ProjectionRow.objects.filter(session_id=session_id).count() == len(live_projections())
