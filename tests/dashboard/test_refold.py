from __future__ import annotations

import io
import json
import signal
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import AlwaysEagerIgnored
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from dashboard.celery import app as celery_app
from dashboard.models import FoldRun, FoldRunResult, ProjectionRow, Session, Warning
from dashboard.refold.folds import fold_session
from dashboard.refold.report import fold_run_report
from dashboard.refold.runs import (
    RefoldError,
    fold_run_claim,
    fold_run_create,
    refold_run,
    refold_session,
)
from dashboard.worker.tasks import refold_run_task
from projections.events import FoldError
from projections.folds.breakdown import ContextBreakdownV5, ContextBreakdownV6, ContextBreakdownV8
from projections.folds.fold import fold, state_size_bytes, to_row
from projections.synthetic import LogBuilder
from tests.dashboard.test_folds import bad_claim_log, conversation, stored_session
from tests.dashboard.workers import broker_or_skip, wait_for, worker_process

V5, V6 = ContextBreakdownV5(), ContextBreakdownV6()


def unmetered_rewrite_log() -> LogBuilder:
    """Two user messages replaced by one without a metering event: v6 folds it at zero delta."""
    log = LogBuilder()
    log.system("system prompt")
    log.user("first question, rather long " * 4)
    log.user("second question")
    log.assistant("an answer")
    log.replace("user/message", "short", 1, 2)
    log.user("next")
    return log


def with_v5_row(session: Session, log: LogBuilder) -> Session:
    """Give a session the v5 row it had before the version bump (at its last good seq)."""
    events = log.events
    try:
        state = fold(V5, events)
    except FoldError as error:
        events = events[: error.seq]
        state = fold(V5, events)
    row = to_row(V5, state, events[-1].seq)
    ProjectionRow.objects.create(session=session, key=row.key, ver=row.ver, seq=row.seq, val=row.val)
    return session


def corpus() -> dict[str, LogBuilder]:
    logs = {f"metered-{n}": conversation(turns=2 + n) for n in range(4)}
    logs["rewritten"] = unmetered_rewrite_log()
    logs["broken"] = bad_claim_log()
    return logs


def store_corpus(logs: dict[str, LogBuilder]) -> dict[str, Session]:
    return {
        name: with_v5_row(stored_session(log.events, external_id=name), log) for name, log in logs.items()
    }


def outcome(run: FoldRun) -> tuple[dict[str, Any], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What a run leaves behind, without timings and ids: its report, its results and the rows."""
    report = fold_run_report(run=FoldRun.objects.get(pk=run.pk)).as_dict()
    for name in ("run", "fold_seconds", "wall_seconds"):
        report.pop(name)
    results = sorted(
        FoldRunResult.objects.filter(run=run).values_list(
            "session__external_id", "status", "events", "divergent_seq", "from_state_bytes", "to_state_bytes"
        )
    )
    rows = sorted(
        ProjectionRow.objects.filter(key="contextBreakdown").values_list(
            "session__external_id", "ver", "seq", "state_bytes", "error"
        )
    )
    return report, results, rows


def new_run(**options: Any) -> FoldRun:
    return fold_run_create(key="contextBreakdown", from_version=5, to_version=6, **options)


def test_a_run_reports_counts_and_retained_state_per_version(db: None) -> None:
    logs = corpus()
    store_corpus(logs)
    run = refold_run(run_id=new_run().pk)
    report = fold_run_report(run=run)
    assert run.status == "done"
    assert (report.sessions, report.identical, report.diverged, report.errored) == (6, 4, 1, 1)
    # The broken log stops at seq 5 under both versions: five of its events are folded.
    assert report.events == sum(len(log.events) for name, log in logs.items() if name != "broken") + 5
    metered = logs["metered-3"].events
    result = FoldRunResult.objects.get(run=run, session__external_id="metered-3")
    assert result.from_state_bytes == state_size_bytes(V5, fold(V5, metered))
    assert result.to_state_bytes == state_size_bytes(V6, fold(V6, metered))
    sizes = list(FoldRunResult.objects.filter(run=run).values_list("to_state_bytes", flat=True))
    assert (report.to_bytes.total, report.to_bytes.max) == (sum(sizes), max(sizes))
    assert report.from_bytes.total > report.to_bytes.total
    assert (run.sessions_done, run.identical, run.diverged, run.errored) == (6, 4, 1, 1)


def test_a_divergence_names_its_first_seq_event_and_both_views(db: None) -> None:
    log = unmetered_rewrite_log()
    store_corpus({"rewritten": log})
    run = refold_run(run_id=new_run().pk)
    result = FoldRunResult.objects.get(run=run)
    assert (result.status, result.divergent_seq, result.divergent_type) == ("diverged", 4, "user/message")
    assert result.from_view == V5.view(fold(V5, log.events[:5])).to_json()
    assert result.to_view == V6.view(fold(V6, log.events[:5])).to_json()
    assert result.from_view != result.to_view
    warning = Warning.objects.get(kind="fold-divergence")
    assert warning.place == "contextBreakdown v5→v6 seq 4"
    assert Session.objects.get(external_id="rewritten").warning_count == 1


def test_a_fold_error_is_recorded_and_the_run_goes_on(db: None) -> None:
    store_corpus({"broken": bad_claim_log(), "fine": conversation()})
    run = refold_run(run_id=new_run().pk)
    broken = FoldRunResult.objects.get(run=run, session__external_id="broken")
    assert broken.status == "error"
    assert "claim-range-mismatch" in broken.error
    assert "seq 5" in broken.error
    assert FoldRunResult.objects.get(run=run, session__external_id="fine").status == "identical"
    assert ProjectionRow.objects.get(session__external_id="broken", key="contextBreakdown").seq == 4
    assert Warning.objects.filter(session__external_id="broken", kind="fold-error").count() == 2


def test_the_new_rows_replace_the_old_versions_rows(db: None) -> None:
    logs = corpus()
    store_corpus(logs)
    refold_run(run_id=new_run().pk)
    assert not ProjectionRow.objects.filter(key="contextBreakdown", ver=5).exists()
    row = ProjectionRow.objects.get(key="contextBreakdown", ver=6, session__external_id="metered-0")
    events = logs["metered-0"].events
    assert row.val == to_row(V6, fold(V6, events), events[-1].seq).val


def test_a_run_over_chosen_sessions_leaves_the_others_alone(db: None) -> None:
    sessions = store_corpus(corpus())
    run = refold_run(run_id=new_run(session_ids=[sessions["metered-1"].pk]).pk)
    assert list(FoldRunResult.objects.filter(run=run).values_list("session__external_id", flat=True)) == [
        "metered-1"
    ]
    assert ProjectionRow.objects.filter(key="contextBreakdown", ver=5).count() == 5


def test_resuming_an_interrupted_run_gives_the_same_report_and_rows(db: None) -> None:
    logs = corpus()
    sessions = store_corpus(logs)
    interrupted = new_run()
    # A worker died after three sessions: their results and rows are committed, nothing else is.
    refold_run(
        run_id=interrupted.pk,
        session_ids=[sessions[name].pk for name in ("metered-0", "broken", "metered-2")],
    )
    assert FoldRun.objects.get(pk=interrupted.pk).status == "running"
    refold_run(run_id=interrupted.pk)
    after_interruption = outcome(interrupted)
    assert FoldRunResult.objects.filter(run=interrupted).count() == len(logs)

    FoldRunResult.objects.all().delete()
    ProjectionRow.objects.all().delete()
    Warning.objects.all().delete()
    for name, session in sessions.items():
        with_v5_row(session, logs[name])
    uninterrupted = refold_run(run_id=new_run().pk)
    assert outcome(uninterrupted) == after_interruption


def test_a_session_is_never_folded_twice_into_a_run(db: None) -> None:
    sessions = store_corpus({"once": conversation()})
    run = new_run()
    assert refold_session(run=run, session_id=sessions["once"].pk) is not None
    assert refold_session(run=run, session_id=sessions["once"].pk) is None
    run.refresh_from_db()
    assert (run.sessions_done, FoldRunResult.objects.filter(run=run).count()) == (1, 1)


def test_a_run_claimed_by_one_task_is_refused_to_another(db: None) -> None:
    run = new_run()
    assert fold_run_claim(run_id=run.pk, owner="task-a")
    # The same task delivered again while the first still holds a live lease: refused too.
    assert not fold_run_claim(run_id=run.pk, owner="task-a")
    assert not fold_run_claim(run_id=run.pk, owner="task-b")
    assert fold_run_claim(run_id=run.pk, owner="task-b", resume=True)
    assert FoldRun.objects.get(pk=run.pk).claimed_by == "task-b"


def test_a_run_whose_lease_ran_out_is_taken_over(db: None) -> None:
    run = new_run()
    assert fold_run_claim(run_id=run.pk, owner="a-dead-task")
    FoldRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert fold_run_claim(run_id=run.pk, owner="task-b")
    assert FoldRun.objects.get(pk=run.pk).claimed_by == "task-b"


def test_enqueueing_a_run_twice_folds_each_session_once(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    store_corpus(corpus())
    run = new_run()
    folded: list[int] = []
    import dashboard.refold.runs as service

    original = service.refold_session

    def counting(*, run: FoldRun, session_id: int) -> FoldRunResult | None:
        folded.append(session_id)
        return original(run=run, session_id=session_id)

    monkeypatch.setattr(service, "refold_session", counting)
    refold_run_task.delay(run.pk)
    refold_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    assert sorted(folded) == sorted(Session.objects.values_list("pk", flat=True))
    assert run.sessions_done == FoldRunResult.objects.filter(run=run).count() == 6


def test_resume_takes_over_a_run_whose_worker_died(db: None) -> None:
    sessions = store_corpus(corpus())
    run = new_run()
    fold_run_claim(run_id=run.pk, owner="a-dead-task")
    refold_run(run_id=run.pk, session_ids=[sessions["metered-0"].pk])
    refold_run_task.delay(run.pk)
    assert FoldRun.objects.get(pk=run.pk).status == "running"
    refold_run_task.delay(run.pk, resume=True)
    run.refresh_from_db()
    assert (run.status, run.sessions_done) == ("done", 6)


def test_a_run_to_a_version_that_is_not_live_writes_rows_the_next_fold_discards(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    fold_session(session_id=session.pk)
    run = refold_run(run_id=fold_run_create(key="contextBreakdown", from_version=8, to_version=5).pk)
    assert run.status == "done"
    assert list(ProjectionRow.objects.filter(key="contextBreakdown").values_list("ver", flat=True)) == [5]
    fold_session(session_id=session.pk)
    assert list(ProjectionRow.objects.filter(key="contextBreakdown").values_list("ver", "seq")) == [
        (8, log.events[-1].seq)
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"key": "contextBreakdown", "from_version": 5, "to_version": 9}, "no state version 9"),
        ({"key": "nope", "from_version": 1, "to_version": 2}, "nope"),
        ({"key": "contextBreakdown", "from_version": 6, "to_version": 6}, "compares two versions"),
        ({"key": "contextBreakdown", "from_version": 5, "to_version": 6, "session_ids": [999]}, "999"),
    ],
)
def test_a_run_that_cannot_start_says_why(db: None, options: dict[str, Any], message: str) -> None:
    with pytest.raises(RefoldError, match=message):
        fold_run_create(**options)


def test_the_refold_command_prints_the_report(db: None) -> None:
    store_corpus(corpus())
    out, err = io.StringIO(), io.StringIO()
    call_command("refold", "--key", "contextBreakdown", "--from", "5", "--to", "6", stdout=out, stderr=err)
    text = out.getvalue()
    for part in ("6 sessions", "4 identical", "1 diverged", "1 errored", "rewritten", "seq 4"):
        assert part in text
    assert err.getvalue() == ""  # no progress bar when stderr is not a terminal


def test_the_refold_command_prints_json(db: None) -> None:
    sessions = store_corpus(corpus())
    out = io.StringIO()
    call_command(
        "refold",
        "--key=contextBreakdown",
        "--from=5",
        "--to=6",
        f"--session={sessions['rewritten'].pk}",
        "--session=metered-1",
        "--json",
        stdout=out,
    )
    report = json.loads(out.getvalue())
    assert (report["sessions"], report["identical"], report["diverged"]) == (2, 1, 1)
    assert report["divergences"][0]["seq"] == 4


def test_the_refold_command_enqueues_with_async(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    store_corpus(corpus())
    sent: list[int] = []
    monkeypatch.setattr(refold_run_task, "delay", lambda run_id, **kwargs: sent.append(run_id))
    out = io.StringIO()
    call_command("refold", "--key", "contextBreakdown", "--from", "5", "--to", "6", "--async", stdout=out)
    run = FoldRun.objects.get()
    assert sent == [run.pk]
    assert run.status == "queued"
    assert run.get_absolute_url() in out.getvalue()


def test_the_refold_command_refuses_an_unknown_version(db: None) -> None:
    with pytest.raises(CommandError, match="no state version 9"):
        call_command("refold", "--key", "contextBreakdown", "--from", "5", "--to", "9")


# --- a real worker killed in the middle of a run -----------------------------------------------------

KILL_AFTER = 60


def large_corpus(sessions: int = 600) -> dict[str, LogBuilder]:
    logs: dict[str, LogBuilder] = {}
    for n in range(sessions):
        if n % 50 == 7:
            logs[f"s{n:04}"] = unmetered_rewrite_log()
        elif n % 50 == 13:
            logs[f"s{n:04}"] = bad_claim_log()
        else:
            logs[f"s{n:04}"] = conversation(turns=5 + n % 7)
    return logs


def send_run(broker: str, run_id: int, **kwargs: Any) -> None:
    with celery_app.connection_for_write(broker) as conn, warnings.catch_warnings():
        # The test process itself runs tasks eagerly; this message is for the worker.
        warnings.simplefilter("ignore", AlwaysEagerIgnored)
        celery_app.send_task(
            "dashboard.tasks.refold_run", args=[run_id], kwargs=kwargs, connection=conn, queue="refold"
        )


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_run_survives_its_worker_being_killed(tmp_path: Path) -> None:
    broker = broker_or_skip()
    logs = large_corpus()
    sessions = store_corpus(logs)
    run = new_run()
    with worker_process(tmp_path / "worker-1.log", broker=broker) as worker:
        send_run(broker, run.pk)
        wait_for(lambda: FoldRun.objects.get(pk=run.pk).sessions_done >= KILL_AFTER, timeout=30)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    killed_at = FoldRun.objects.get(pk=run.pk)
    assert killed_at.status == "running"
    assert killed_at.sessions_done < len(logs), "the run finished before the worker was killed"

    with worker_process(tmp_path / "worker-2.log", broker=broker):
        send_run(broker, run.pk, resume=True)
        # A resume picks up where the dead worker stopped; how soon the rest is folded is the
        # machine's load, so the bound only keeps a stuck run from hanging the suite.
        wait_for(lambda: FoldRun.objects.get(pk=run.pk).is_finished, timeout=180)
    after_kill = outcome(run)
    assert FoldRunResult.objects.filter(run=run).count() == len(logs)
    assert FoldRun.objects.get(pk=run.pk).sessions_done == len(logs)

    FoldRunResult.objects.all().delete()
    ProjectionRow.objects.all().delete()
    Warning.objects.all().delete()
    for name, session in sessions.items():
        with_v5_row(session, logs[name])
    assert outcome(refold_run(run_id=new_run().pk)) == after_kill


def test_a_refold_across_the_envelope_bump_reports_where_the_tool_schemas_first_count(db: None) -> None:
    log = LogBuilder()
    log.user("hello")
    header = log.header(system="You are terse.", tools=[{"name": "bash", "parameters": {"type": "object"}}])
    log.assistant("hi")
    store_corpus({"header-era": log})
    run = refold_run(run_id=fold_run_create(key="contextBreakdown", from_version=6, to_version=8).pk)
    result = FoldRunResult.objects.get(run=run)
    assert (result.status, result.divergent_seq, result.divergent_type) == ("diverged", 1, "request/header")
    v8 = ContextBreakdownV8()
    assert result.from_view == {
        "systemTokens": 0,
        "toolsTokens": 0,
        "messageTokens": V6.view(fold(V6, log.events[:2])).message_tokens,
    }
    assert result.to_view == v8.view(fold(v8, log.events[: header.seq + 1])).to_json()
    assert result.to_view["toolsTokens"] > 0
    assert result.to_view["systemTokens"] > 0
    versions = ProjectionRow.objects.filter(key="contextBreakdown").values_list("ver", flat=True)
    assert 8 in versions
    assert 6 not in versions


@pytest.mark.parametrize(("sizes", "median"), [([30, 10, 45, 20], 25.0), ([30, 10, 20], 20.0), ([], 0.0)])
def test_the_report_gives_the_total_median_and_largest_state_of_each_version(
    db: None, sizes: list[int], median: float
) -> None:
    run = FoldRun.objects.create(key="contextBreakdown", from_version=5, to_version=6)
    for n, size in enumerate(sizes):
        session = stored_session([], external_id=f"s{n}")
        FoldRunResult.objects.create(
            run=run, session=session, status="identical", from_state_bytes=size, to_state_bytes=2 * size
        )
    report = fold_run_report(run=run)
    assert report.from_bytes.as_dict() == {
        "version": 5,
        "total": sum(sizes),
        "median": median,
        "max": max(sizes, default=0),
    }
    assert (report.to_bytes.total, report.to_bytes.median) == (2 * sum(sizes), 2 * median)
