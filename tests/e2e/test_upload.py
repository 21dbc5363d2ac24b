from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.dashboard.logs import dsh_lines, write_jsonl

pytestmark = pytest.mark.e2e

JOB_TIMEOUT_MS = 30_000


def test_an_operator_uploads_a_log_and_its_session_appears_in_the_list(
    live_server: Any, page: Any, login_as: Any, tmp_path: Path, screenshot: Any
) -> None:
    log = tmp_path / "uploaded-run" / "session.jsonl"
    write_jsonl(log, dsh_lines("uploaded-run", turns=3))
    login_as("operator")
    page.goto(live_server.url + "/ingest/")
    page.get_by_label("Files").set_input_files(str(log))
    page.get_by_label("Source").fill("ci-runner")
    page.get_by_role("button", name="Upload and ingest").click()

    expect(page.get_by_role("heading", name="Ingest #")).to_be_visible()
    expect(page.get_by_role("progressbar", name="Ingest progress")).to_have_attribute(
        "aria-valuenow", "100", timeout=JOB_TIMEOUT_MS
    )
    expect(page.locator("#job-progress .badge")).to_have_text("Done")
    expect(page.locator("#job-progress dt:has-text('Sessions added') + dd")).to_have_text("1")
    screenshot("job")

    page.get_by_role("link", name="Sessions").first.click()
    expect(page.get_by_role("link", name="Session uploaded-run")).to_be_visible()
    expect(page.get_by_role("cell", name="ci-runner")).to_be_visible()
    screenshot("listed")


def test_a_viewer_sees_the_ingest_jobs_but_no_upload_form(
    live_server: Any, page: Any, login_as: Any, screenshot: Any
) -> None:
    login_as("viewer")
    page.goto(live_server.url + "/ingest/")
    expect(page.get_by_role("heading", name="Ingest jobs")).to_be_visible()
    expect(page.get_by_role("heading", name="Upload logs")).to_have_count(0)
    expect(page.get_by_role("button", name="Upload and ingest")).to_have_count(0)
    expect(page.locator("input[type=file]")).to_have_count(0)
    screenshot("viewer")
