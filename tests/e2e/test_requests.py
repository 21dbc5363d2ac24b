from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import RequestAnalysis

pytestmark = pytest.mark.e2e


def test_a_request_whose_prefix_changed_highlights_the_change_and_its_broken_marker(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    ingest_demo_file("claude-trace", "system-timestamp")
    analysis = (
        RequestAnalysis.objects.filter(label__startswith="prefix-changed@")
        .select_related("request")
        .order_by("request__ordinal")
        .first()
    )
    assert analysis is not None, "the system-timestamp trace analyses to a prefix change"
    login_as("viewer")
    page.goto(live_server.url + analysis.request.get_absolute_url())

    section = page.get_by_role("region", name="Cache analysis")
    expect(section.get_by_text(analysis.label, exact=True)).to_be_visible()
    expect(section.locator("mark.change").first).to_be_visible()
    expect(section.locator("mark.change").first).not_to_be_empty()
    markers = section.locator("table.markers").last  # the previous request's, after the markers this one sent
    expect(markers.locator("tbody tr").first).to_be_visible()
    expect(markers.get_by_text("broken", exact=True).first).to_be_visible()
    expect(markers).to_contain_text("the prefix changed before it")
    screenshot("change")
