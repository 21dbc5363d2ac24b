from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import FoldRun, ProjectionRow, Session
from dashboard.refold.folds import fold_session
from dashboard.refold.runs import RefoldUnderway, fold_run_claim, fold_run_create, refold_run
from projections.folds.registry import defined_versions, live_versions
from tests.dashboard.test_folds import bad_claim_log, conversation, stored_session
from tests.dashboard.test_refold import corpus, store_corpus

PROJECTIONS = reverse("dashboard:projections")
START = {"comparison": "contextBreakdown:5:6"}


def finished_run() -> FoldRun:
    store_corpus(corpus())
    return refold_run(run_id=fold_run_create(key="contextBreakdown", from_version=5, to_version=6).pk)


def test_the_projections_page_lists_keys_with_their_rows(viewer_client: Client) -> None:
    fold_session(session_id=stored_session(conversation().events).pk)
    response = viewer_client.get(PROJECTIONS)
    assert response.status_code == 200
    text = response.content.decode()
    for part in ("contextBreakdown", "tokenUsage", "v8 (live): 1 row", "v6: 0 rows", "v5: 0 rows"):
        assert part in text
    assert "Start re-fold" not in text


def test_the_projections_page_lists_runs_with_their_progress(viewer_client: Client) -> None:
    run = finished_run()
    response = viewer_client.get(PROJECTIONS)
    assert run.get_absolute_url() in response.content.decode()
    assert 'aria-valuenow="100"' in response.content.decode()


def test_a_viewer_cannot_start_a_refold(viewer_client: Client) -> None:
    response = viewer_client.post(PROJECTIONS, START)
    assert response.status_code == 403
    assert not FoldRun.objects.exists()


def test_an_operator_sees_the_refold_form(operator_client: Client) -> None:
    assert "Start re-fold" in operator_client.get(PROJECTIONS).content.decode()


def test_an_operator_starts_a_refold_as_a_job(
    operator_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    store_corpus(corpus())
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = operator_client.post(PROJECTIONS, START)
    run = FoldRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == run.get_absolute_url()
    assert len(callbacks) == 1  # enqueued once the run row committed
    run.refresh_from_db()
    assert (run.status, run.created_by.get_username(), run.sessions_done) == ("done", "operator", 6)


def test_an_invalid_refold_says_why(operator_client: Client) -> None:
    response = operator_client.post(PROJECTIONS, {"comparison": "contextBreakdown:5:5"})
    assert response.status_code == 400
    assert "Choose two different versions" in response.content.decode()
    assert not FoldRun.objects.exists()


def test_the_form_offers_only_each_keys_own_versions_and_never_one_version_twice(
    operator_client: Client,
) -> None:
    page = operator_client.get(PROJECTIONS).content.decode()
    offered = re.findall(r'<option value="([^"]+)"', page)
    assert offered, "the re-fold form offers no comparison"
    *_, previous, live = defined_versions("contextBreakdown")
    assert live == live_versions()["contextBreakdown"]
    assert offered[0] == f"contextBreakdown:{previous}:{live}"
    for value in offered:
        key, old, new = value.split(":")
        assert old != new
        assert {int(old), int(new)} <= set(defined_versions(key)), value


@pytest.mark.parametrize(
    ("comparison", "reason"),
    [
        ("contextBreakdown:5:99", "contextBreakdown has no state version 99"),
        ("nope:1:2", "No projection key &#x27;nope&#x27;"),
        ("contextBreakdown:five:6", "is not a key and two versions"),
    ],
)
def test_a_hand_made_comparison_the_form_never_offers_is_refused_with_the_reason(
    operator_client: Client, comparison: str, reason: str
) -> None:
    response = operator_client.post(PROJECTIONS, {"comparison": comparison})
    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not FoldRun.objects.exists()


def test_the_run_page_reports_divergences_with_links_to_the_event(viewer_client: Client) -> None:
    run = finished_run()
    response = viewer_client.get(run.get_absolute_url())
    text = response.content.decode()
    assert response.status_code == 200
    session = Session.objects.get(external_id="rewritten")
    assert f"{session.get_absolute_url()}?from=4#seq-4" in text
    # Both views, escaped; PostgreSQL orders their keys its own way.
    assert "&#x27;systemTokens&#x27;: " in text
    assert "claim-range-mismatch" in text
    assert 'aria-valuenow="100"' in text
    assert "hx-trigger" not in text.split('id="fold-run"')[1].split(">")[0]


def test_the_progress_fragment_polls_while_the_run_goes_on(viewer_client: Client) -> None:
    store_corpus(corpus())
    run = fold_run_create(key="contextBreakdown", from_version=5, to_version=6)
    fold_run_claim(run_id=run.pk, owner="worker-1")
    refold_run(run_id=run.pk, session_ids=[Session.objects.order_by("pk").first().pk])  # type: ignore[union-attr]
    url = reverse("dashboard:fold_run_progress", args=[run.pk])
    response = viewer_client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    text = response.content.decode()
    assert 'hx-trigger="every 1s"' in text
    assert 'aria-valuenow="16"' in text  # one session of six
    assert "<html" not in text


def test_the_progress_fragment_stops_polling_when_the_run_is_finished(viewer_client: Client) -> None:
    run = finished_run()
    response = viewer_client.get(reverse("dashboard:fold_run_progress", args=[run.pk]))
    assert response.status_code == 286
    assert 'aria-valuenow="100"' in response.content.decode()


def test_an_operator_resumes_a_stalled_run(
    operator_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    store_corpus(corpus())
    run = fold_run_create(key="contextBreakdown", from_version=5, to_version=6)
    fold_run_claim(run_id=run.pk, owner="a-dead-task")
    FoldRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert "Resume re-fold" in operator_client.get(run.get_absolute_url()).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(run.get_absolute_url())
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.sessions_done) == ("done", 6)


def test_a_viewer_cannot_resume_a_run(viewer_client: Client) -> None:
    store_corpus(corpus())
    run = fold_run_create(key="contextBreakdown", from_version=5, to_version=6)
    assert viewer_client.post(run.get_absolute_url()).status_code == 403


def test_the_session_page_draws_the_breakdown_and_the_now_panel(viewer_client: Client) -> None:
    session = stored_session(conversation().events)
    response = viewer_client.get(session.get_absolute_url())
    text = response.content.decode()
    assert response.status_code == 200
    assert 'data-chart="breakdown-figure"' in text
    assert "js/charts.js" in text
    figure = json.loads(text.split('id="breakdown-figure" type="application/json">')[1].split("</script>")[0])
    assert [trace["name"] for trace in figure["data"]][:3] == ["system", "tools", "messages"]
    assert "Free space" in text


def test_the_session_page_shows_where_the_fold_stopped(viewer_client: Client) -> None:
    session = stored_session(bad_claim_log().events, external_id="broken-page")
    fold_session(session_id=session.pk)
    text = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "The fold stopped" in text
    assert "claim-range-mismatch" in text
    assert "fold-error" in text  # the warning, from the session's warnings
    assert ProjectionRow.objects.filter(session=session).exclude(error="").exists()


def test_the_session_page_says_why_a_log_is_not_folded(viewer_client: Client) -> None:
    session = stored_session(conversation().events, unfoldable="seq 2: unknown event type 'x/y'")
    text = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "Not folded: seq 2: unknown event type" in text
    assert 'data-chart="breakdown-figure"' not in text


def test_a_double_click_on_re_fold_starts_one_run_and_shows_it_to_the_second_click(
    operator_client: Client,
) -> None:
    # Its task is not run here (the commit callbacks are not), so the first run is still queued.
    first = operator_client.post(PROJECTIONS, START)
    second = operator_client.post(PROJECTIONS, START, follow=True)

    [run] = FoldRun.objects.all()
    assert first["Location"] == run.get_absolute_url()
    assert second.redirect_chain == [(run.get_absolute_url(), 302)]
    assert f"Re-fold #{run.pk} of this comparison is under way already." in second.content.decode()


def test_a_finished_run_or_one_over_chosen_sessions_does_not_hold_back_a_new_run(db: None) -> None:
    done = finished_run()
    again = fold_run_create(key="contextBreakdown", from_version=5, to_version=6)
    chosen = fold_run_create(
        key="contextBreakdown",
        from_version=5,
        to_version=6,
        session_ids=[Session.objects.first().pk],  # type: ignore[union-attr]
    )
    assert len({done.pk, again.pk, chosen.pk}) == 3
    with pytest.raises(RefoldUnderway, match=f"re-fold #{again.pk} of contextBreakdown v5→v6 is queued"):
        fold_run_create(key="contextBreakdown", from_version=5, to_version=6)
