"""Resuming a re-fold run: one service with one guard, used by the run page and by the command."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from dashboard.models import FoldRun
from dashboard.refold.runs import RefoldError, fold_run_claim, fold_run_fail, fold_run_resume, refold_run
from tests.dashboard.test_refold import corpus, new_run, store_corpus


def failed_run() -> FoldRun:
    store_corpus(corpus())
    run = new_run()
    fold_run_claim(run_id=run.pk, owner="a-dead-task")
    fold_run_fail(run_id=run.pk, message="RuntimeError: the worker's disk filled")
    return FoldRun.objects.get(pk=run.pk)


def done_run() -> FoldRun:
    store_corpus(corpus())
    return refold_run(run_id=new_run().pk)


def test_resuming_a_failed_run_sets_it_running_and_clears_its_failure(db: None) -> None:
    run = fold_run_resume(run_id=failed_run().pk)
    assert (run.status, run.message, run.finished_at) == ("running", "", None)


def test_resuming_a_queued_run_sets_it_running(db: None) -> None:
    store_corpus(corpus())
    assert fold_run_resume(run_id=new_run().pk).status == "running"


def test_a_done_run_cannot_be_resumed(db: None) -> None:
    run = done_run()
    with pytest.raises(RefoldError, match=f"re-fold #{run.pk} is already done"):
        fold_run_resume(run_id=run.pk)
    assert FoldRun.objects.get(pk=run.pk).status == "done"


def test_an_unknown_run_cannot_be_resumed(db: None) -> None:
    with pytest.raises(RefoldError, match="no re-fold run #999"):
        fold_run_resume(run_id=999)


def test_the_run_page_resumes_a_failed_run_to_the_end(
    operator_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    run = failed_run()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = operator_client.post(run.get_absolute_url())
    assert response.status_code == 302
    assert len(callbacks) == 1
    run.refresh_from_db()
    assert (run.status, run.sessions_done, run.message) == ("done", 6, "")


def test_the_run_page_refuses_a_done_run_and_says_why(
    operator_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    run = done_run()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = operator_client.post(run.get_absolute_url(), follow=True)
    assert callbacks == []  # nothing enqueued
    assert f"re-fold #{run.pk} is already done" in response.content.decode()
    assert FoldRun.objects.get(pk=run.pk).status == "done"


def test_the_command_resumes_a_failed_run_to_the_end(db: None) -> None:
    run = failed_run()
    out = io.StringIO()
    call_command("refold", "--resume", str(run.pk), stdout=out, stderr=io.StringIO())
    run.refresh_from_db()
    assert (run.status, run.sessions_done, run.message) == ("done", 6, "")
    assert f"Re-fold #{run.pk} contextBreakdown v5 → v6: done" in out.getvalue()


def test_the_command_refuses_a_done_run_with_the_same_reason_as_the_page(db: None) -> None:
    run = done_run()
    with pytest.raises(CommandError, match=f"re-fold #{run.pk} is already done"):
        call_command("refold", "--resume", str(run.pk))


def test_the_command_refuses_an_unknown_run(db: None) -> None:
    with pytest.raises(CommandError, match="no re-fold run #999"):
        call_command("refold", "--resume", "999")
