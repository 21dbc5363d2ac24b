"""The alerts page in a real browser: the badge in the navigation while an alert is open, the
alert's figures, and an operator acknowledging and muting it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from dashboard.alerts.runner import alerts_check
from dashboard.ingest.files import ingest_paths
from dashboard.models import Alert
from tests.dashboard.alert_fleet import ensure_default_rule, regression, write_plan

pytestmark = pytest.mark.e2e


@pytest.fixture
def regressed_fleet(tmp_path: Path, transactional_db: None) -> Alert:
    ensure_default_rule()
    for number, plan in enumerate(regression(timezone.now())):
        root = tmp_path / str(number)
        write_plan(root, plan)
        ingest_paths(paths=[root], source_name=plan.source)
    result, _ = alerts_check()
    [alert] = result.opened
    return alert


def test_an_operator_acknowledges_and_mutes_an_open_alert(
    live_server: Any, page: Any, login_as: Any, regressed_fleet: Alert, screenshot: Any
) -> None:
    login_as("operator")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(live_server.url + reverse("dashboard:overview"))
    expect(page.locator("#alerts-badge")).to_have_text("1")

    page.goto(live_server.url + reverse("dashboard:alerts"))
    row = page.locator(f"#alert-{regressed_fleet.pk}")
    expect(row).to_contain_text("alpha · claude-code 2.2.0")
    expect(row.locator("td").nth(2)).to_contain_text("90.0%")
    expect(row.locator("td").nth(3)).to_contain_text("30.0%")
    expect(row.get_by_role("link", name="savings")).to_have_attribute("href", "/savings/")
    screenshot("open")

    row.get_by_role("button", name="Acknowledge").click()
    expect(page.locator(".messages")).to_contain_text("acknowledged")
    expect(row).to_contain_text("by operator-user")
    expect(row.get_by_role("button", name="Acknowledge")).to_have_count(0)

    row.get_by_label("Mute for").select_option(label="a day")
    row.get_by_role("button", name="Mute").click()
    expect(page.locator(".messages")).to_contain_text("Nothing is sent for alpha · claude-code 2.2.0 until")
    expect(row.locator(".badge", has_text="muted")).to_be_visible()
    screenshot("muted")

    regressed_fleet.refresh_from_db()
    assert regressed_fleet.acknowledged_by == "operator-user"
    assert regressed_fleet.muted_until is not None
    # Still open: acknowledged and muted alerts stay in the badge until their condition clears.
    expect(page.locator("#alerts-badge")).to_have_text("1")
