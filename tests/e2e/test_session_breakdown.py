"""The session page's context breakdown drawn in a real browser, for a capture and a transcript."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import Session

pytestmark = pytest.mark.e2e


def test_a_claude_trace_session_draws_system_tools_and_messages_under_the_provider_line(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    file = ingest_demo_file("claude-trace", "edited")
    session = Session.objects.get(external_id=file.sessions[0].external_id)
    login_as("viewer")
    page.goto(live_server.url + session.get_absolute_url())

    now = page.get_by_label("Context now")
    expect(now.locator("dt", has_text="Tools")).to_be_visible()
    expect(now.locator("dt", has_text="Context window")).to_be_visible()
    expect(now.locator("dt", has_text="Free space")).to_be_visible()
    expect(now.locator("dd").first).not_to_have_text("0")
    breakdown = page.locator("[data-chart=breakdown-figure]")
    expect(breakdown.locator(".main-svg").first).to_be_visible()
    for name in ("system", "tools", "messages", "provider-reported prompt"):
        expect(breakdown.locator(".legendtext", has_text=name).first).to_be_visible()
    # The 200k window is far above a few thousand tokens: it is named, and the axis fits the data.
    expect(breakdown.locator(".annotation-text", has_text="context window 200,000 tokens")).to_be_visible()
    top_tick = breakdown.locator(".ytick text").last.text_content() or ""
    assert top_tick
    assert "200k" not in top_tick
    screenshot("claude-trace")


def test_a_claude_code_session_draws_the_inferred_band_and_never_a_system_prompt_of_zero(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    file = ingest_demo_file("claude-code", "compacted")
    session = Session.objects.get(external_id=file.sessions[0].external_id)
    login_as("viewer")
    page.goto(live_server.url + session.get_absolute_url())

    now = page.get_by_label("Context now")
    expect(now.locator("dt", has_text="System + tools")).to_be_visible()
    expect(now.locator("dt", has_text="System prompt")).to_have_count(0)
    expect(now.locator("dt", has_text="Context window")).to_be_visible()
    expect(now.locator("dt", has_text="Free space")).to_be_visible()
    expect(page.locator("#breakdown-basis")).to_contain_text("system + tools (inferred)")
    breakdown = page.locator("[data-chart=breakdown-figure]")
    expect(breakdown.locator(".main-svg").first).to_be_visible()
    expect(breakdown.locator(".legendtext", has_text="system + tools (inferred)")).to_be_visible()
    expect(breakdown.locator(".legendtext", has_text="provider-reported prompt")).to_be_visible()
    expect(breakdown.locator(".legendtext", has_text="compactions and prunes")).to_be_visible()
    screenshot("claude-code")
