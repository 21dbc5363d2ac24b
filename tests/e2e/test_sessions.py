from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import Session

pytestmark = pytest.mark.e2e


def test_a_compacted_sessions_charts_draw_and_show_hover_text(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    file = ingest_demo_file("dsh", "compacted")
    session = Session.objects.get(external_id=file.sessions[0].external_id)
    login_as("viewer")
    page.goto(live_server.url + session.get_absolute_url())

    breakdown = page.locator("[data-chart=breakdown-figure]")
    requests = page.locator("[data-cache-chart=requests-chart-data]")
    expect(breakdown.locator(".main-svg").first).to_be_visible()
    # Charts below the fold are drawn only when they near the screen.
    requests.scroll_into_view_if_needed()
    expect(requests.locator(".main-svg").first).to_be_visible()
    breakdown.scroll_into_view_if_needed()
    # The compactions are drawn as markers over the stacked breakdown.
    expect(breakdown.locator(".legendtext", has_text="compactions and prunes")).to_be_visible()

    # The markers are the last trace; the provider-reported line before them has points of its own.
    breakdown.locator(".scatterlayer .trace").last.locator(".points .point").first.hover(force=True)
    expect(breakdown.locator(".hoverlayer text").first).to_contain_text("compaction at seq")
    # The requests chart shows every trace at the x under the pointer ("x unified").
    requests.locator(".nsewdrag").hover()
    expect(requests.locator(".hoverlayer")).to_contain_text("tokens")
    expect(requests.locator(".hoverlayer")).to_contain_text("cache read")
    screenshot("charts")


# Plotly lays a transparent drag surface over the plot that takes the pointer and finds the point
# under it, so a hover moves the mouse over the point without asking that the point receive it.


def test_the_breakdown_switches_between_event_seq_and_time(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    file = ingest_demo_file("dsh", "compacted")
    session = Session.objects.get(external_id=file.sessions[0].external_id)
    login_as("viewer")
    page.goto(live_server.url + session.get_absolute_url())

    breakdown = page.locator("[data-chart=breakdown-figure]")
    axis_title = breakdown.locator(".g-xtitle text")
    expect(axis_title).to_have_text("event seq")
    breakdown.locator(".updatemenu-button", has_text="by time").click()
    expect(axis_title).to_have_text("time")
    # A date axis labels its ticks with clock times, not sequence numbers.
    expect(breakdown.locator(".xtick text").first).to_contain_text(":")
    screenshot("by-time")
    breakdown.locator(".updatemenu-button", has_text="by event").click()
    expect(axis_title).to_have_text("event seq")
