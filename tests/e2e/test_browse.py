from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.ingest.files import ingest_paths
from tests.dashboard.logs import dsh_lines, write_jsonl

pytestmark = pytest.mark.e2e


def test_logging_in_through_the_form_reaches_the_overview(
    live_server: Any, page: Any, transactional_db: None, screenshot: Any
) -> None:
    from django.contrib.auth.models import Group, User

    ana = User.objects.create_user("ana", password="a-long-test-password")
    ana.groups.add(Group.objects.get_or_create(name="viewer")[0])  # no role, no data
    page.goto(live_server.url + "/")
    expect(page).to_have_url(live_server.url + "/accounts/login/?next=/")
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    screenshot("overview")


def test_filtering_the_sessions_list_swaps_the_table_without_a_page_load(
    live_server: Any, page: Any, login_as: Any, tmp_path: Path, screenshot: Any
) -> None:
    for name in ("alpha-run", "beta-run"):
        write_jsonl(tmp_path / name / "session.jsonl", dsh_lines(name, turns=2))
    ingest_paths(paths=[tmp_path], source_name="build-farm")
    login_as("viewer")
    page.goto(live_server.url + "/sessions/")
    page.evaluate("window.__sameDocument = true")
    expect(page.get_by_role("link", name="Session beta-run")).to_be_visible()
    page.get_by_label("Search").fill("alpha")
    expect(page.get_by_role("link", name="Session beta-run")).to_have_count(0)
    expect(page.get_by_role("link", name="Session alpha-run")).to_be_visible()
    assert page.evaluate("window.__sameDocument") is True  # the table was swapped, the page not reloaded
    expect(page).to_have_url(live_server.url + "/sessions/?q=alpha&sort=-activity")  # the state is in the URL
    screenshot("filtered")
