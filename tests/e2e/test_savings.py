"""What a fix would save, in a real browser at desktop and phone width: the session's "What would
fix this" panel, the savings page with a drill-down, and the overview's money figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.ingest.files import ingest_paths
from dashboard.models import Session, SessionSavings
from dashboard.web.money import usd
from tests.dashboard.logs import capture_line, write_jsonl
from tests.projections.cache.whatif.sessions import clock_session

pytestmark = pytest.mark.e2e

WIDTHS = ({"width": 1440, "height": 900}, {"width": 390, "height": 844})


def fits(page: Any) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{page.url} scrolls sideways: {widths[0]} px wide in {widths[1]} px"


@pytest.mark.parametrize("size", WIDTHS, ids=lambda size: str(size["width"]))
def test_the_fix_panel_savings_page_and_money_figures_read_at_desktop_and_phone_width(
    page: Any, live_server: Any, login_as: Any, tmp_path: Path, screenshot: Any, size: dict[str, int]
) -> None:
    path = write_jsonl(tmp_path / "clock.jsonl", [capture_line(r) for r in clock_session()])
    assert not ingest_paths(paths=[path], source_name="laptop", format="anthropic-capture").errors
    session = Session.objects.get(external_id="clock")
    best = usd(SessionSavings.objects.get(session=session).best_saving)
    login_as("viewer")
    page.set_viewport_size(size)

    page.goto(live_server.url + session.get_absolute_url())
    panel = page.locator("#session-fixes")
    expect(panel.get_by_role("heading", name="What would fix this")).to_be_visible()
    expect(panel.locator('tr[data-scenario="stable-prefix"]')).to_contain_text(best)
    expect(page.locator("#session-miss-cost")).to_contain_text("$")
    panel.scroll_into_view_if_needed()
    fits(page)
    screenshot("panel")

    page.goto(live_server.url + "/?range=all")
    expect(page.locator("#kpi-lost .value")).not_to_have_text("—")
    best_link = page.locator("#kpi-best-fix .value a")
    expect(best_link).to_have_text(best)
    fits(page)
    screenshot("overview")

    best_link.click()
    expect(page.get_by_role("heading", name="What a fix would save")).to_be_visible()
    cause = page.locator('#savings-cause tr[data-name="prefix-changed@system"]')
    expect(cause).to_contain_text(best)
    fits(page)
    screenshot("savings")
    cause.get_by_role("link").click()
    drilled = page.locator("#savings-sessions")
    expect(drilled.locator(f'tr[data-session="{session.pk}"]')).to_contain_text(best)
    fits(page)
    screenshot("savings-sessions")
