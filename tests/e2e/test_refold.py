from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import Session
from dashboard.refold.runs import fold_run_create, refold_run

pytestmark = pytest.mark.e2e

# A re-fold runs through the task queue; on a busy machine its page may take a while to report done.
RUN_TIMEOUT_MS = 30_000


def test_an_operator_starts_a_refold_and_watches_it_reach_its_report(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    ingest_demo_file("dsh", "compacted")
    login_as("operator")
    page.goto(live_server.url + "/projections/")
    page.get_by_role("combobox", name="Key and versions").select_option("contextBreakdown:7:8")
    page.get_by_role("button", name="Start re-fold").click()

    expect(page.get_by_role("heading", name="Re-fold #")).to_contain_text("contextBreakdown v7 → v8")
    expect(page.get_by_role("progressbar", name="Re-fold progress")).to_have_attribute(
        "aria-valuenow", "100", timeout=RUN_TIMEOUT_MS
    )
    expect(page.locator("#fold-run .badge").first).to_have_text("Done")
    figures = page.get_by_role("region", name="Run figures")
    expect(figures.locator(".figure", has_text="Sessions").locator(".value")).to_have_text("1")
    expect(figures.locator(".figure", has_text="Errored").locator(".value")).to_have_text("0")
    expect(page.get_by_role("heading", name="Retained state")).to_be_visible()
    screenshot("report")

    run_id = re.search(r"/projections/runs/(\d+)/", page.url)
    assert run_id is not None, page.url
    page.get_by_role("link", name="Projections").first.click()
    progress = page.get_by_role("progressbar", name=f"Run {run_id.group(1)} progress")
    expect(progress).to_have_attribute("aria-valuenow", "100")


def test_a_runs_page_polls_its_progress_until_the_run_is_done(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    ingest_demo_file("dsh", "compacted")
    ingest_demo_file("dsh", "system-rewrites")
    first, second = Session.objects.order_by("pk").values_list("pk", flat=True)
    run = fold_run_create(key="contextBreakdown", from_version=7, to_version=8)
    login_as("viewer")
    page.goto(live_server.url + run.get_absolute_url())
    progress = page.get_by_role("progressbar", name="Re-fold progress")
    expect(progress).to_have_attribute("aria-valuenow", "0")
    expect(page.locator("#fold-run")).to_have_attribute("hx-trigger", "every 1s")

    # A worker folds the sessions one at a time while the page is open; the page follows.
    refold_run(run_id=run.pk, session_ids=[first])
    expect(progress).to_have_attribute("aria-valuenow", "50", timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_text("1 of 2 sessions")).to_be_visible()
    screenshot("halfway")
    refold_run(run_id=run.pk, session_ids=[second])
    expect(progress).to_have_attribute("aria-valuenow", "100", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fold-run .badge").first).to_have_text("Done")
    # The finished fragment carries no poll, so the page stops asking.
    expect(page.locator("#fold-run")).not_to_have_attribute("hx-get", re.compile(".*"))
    screenshot("done")


def test_a_viewer_sees_the_projections_but_no_refold_form(
    live_server: Any, page: Any, login_as: Any, screenshot: Any
) -> None:
    login_as("viewer")
    page.goto(live_server.url + "/projections/")
    expect(page.get_by_role("heading", name="Keys")).to_be_visible()
    expect(page.get_by_role("heading", name="Re-fold", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Start re-fold")).to_have_count(0)
    screenshot("viewer")
