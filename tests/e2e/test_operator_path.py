"""The operator's way in, on a wide screen and a phone: the overview of a fleet whose logs are old
says where they are, a session is found by its title, and its page leads to its costliest miss.
The sessions list keeps its key figures in view at 390 px."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import RequestAnalysis, Session

pytestmark = pytest.mark.e2e

SIZES = {"1440": {"width": 1440, "height": 900}, "390": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", SIZES)
def test_overview_to_a_session_found_by_its_title_to_its_costliest_miss(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any, size: str
) -> None:
    ingest_demo_file("claude-trace", "ttl-expired")
    session = max(Session.objects.all(), key=lambda s: s.request_count)
    session.title = "Nightly build cache regression"  # as its summary line would name it
    session.save()
    miss = (
        RequestAnalysis.objects.filter(session=session, material=True)
        .select_related("request")
        .order_by("-cost")
        .first()
    )
    assert miss is not None, "the demo's ttl-expired trace has a material miss"
    login_as("viewer")
    page.set_viewport_size(SIZES[size])

    # The demo ran in 2025: the default range is empty and says how many sessions lie before it.
    page.goto(f"{live_server.url}/")
    notice = page.locator("#outside-range a")
    expect(notice).to_contain_text("outside this range: show all time")
    screenshot(f"{size}-overview-outside")
    notice.click()
    page.wait_for_url("**/?range=all")
    expect(page.locator("#fleet-cost .value")).not_to_have_text("—")
    _tables_fit(page, SIZES[size]["width"])
    screenshot(f"{size}-overview-all")

    if size == "390":
        page.get_by_text("Menu").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sessions").click()
    page.get_by_label("Search").fill("cache regression")
    rows = page.locator("#session-table tbody tr")
    expect(rows).to_have_count(1)
    # The search answers both its "change" and its debounced "input" (300 ms): the table is swapped
    # twice, and measured only once the second swap is done.
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    expect(rows.first).to_contain_text("Nightly build cache regression")
    cost_cell = rows.first.locator("td").nth(_column(page, "Cost"))
    expect(cost_cell).to_be_visible()
    box = cost_cell.bounding_box()
    assert box is not None
    assert box["x"] + box["width"] <= SIZES[size]["width"]  # in view, not off to the right
    _tables_fit(page, SIZES[size]["width"])
    screenshot(f"{size}-sessions-found")

    rows.first.get_by_role("link", name="Nightly build cache regression").click()
    page.wait_for_url(f"**{session.get_absolute_url()}")
    costliest = page.locator("#costliest-miss")
    expect(costliest).to_contain_text(f"request {miss.request.ordinal + 1}")
    costliest.click()

    page.wait_for_url(f"**{miss.request.get_absolute_url()}")
    expect(page.locator("h1")).to_be_visible()
    screenshot(f"{size}-costliest-miss")


def _column(page: Any, name: str) -> int:
    """The index of the sessions table's column headed ``name``, as shown."""
    headers = page.locator("#session-table thead th").all_inner_texts()
    return next(index for index, text in enumerate(headers) if text.strip().startswith(name))


def _tables_fit(page: Any, width: int) -> None:
    """Every table of key figures on the page ends inside the screen: its last column is seen."""
    tables = page.locator("table.priority")
    assert tables.count() > 0
    for index in range(tables.count()):
        table = tables.nth(index)
        table.scroll_into_view_if_needed()
        box = table.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= width, (index, box)
