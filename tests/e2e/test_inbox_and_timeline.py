"""The warnings inbox without the host's log lines, and a session page's conversation timeline, in a
real browser over the demo's dsh logs (their host writes kv-unified cache lines)."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from dashboard.demo import DemoManifest
from dashboard.ingest.files import ingest_paths
from dashboard.models import HostNote, ModelPrice, Session, Warning

pytestmark = pytest.mark.e2e


@pytest.fixture
def dsh_fleet(demo_dataset: tuple[Path, DemoManifest], transactional_db: None) -> None:
    # An earlier live-server test may have flushed the price table the migrations seed.
    ModelPrice.objects.get_or_create(
        pattern="claude-sonnet-4",
        defaults={
            "provider": "anthropic",
            "input": Decimal(3),
            "cache_write_5m": Decimal("3.75"),
            "cache_write_1h": Decimal(6),
            "cache_read": Decimal("0.30"),
            "output": Decimal(15),
            "read_on": date(2026, 1, 5),
        },
    )
    root, manifest = demo_dataset
    for file in manifest.files_of("dsh"):
        ingest_paths(paths=[root / file.path], source_name=file.source)


def test_the_inbox_lists_problems_by_cost_without_host_notes(
    live_server: Any, page: Any, login_as: Any, dsh_fleet: None, screenshot: Any
) -> None:
    assert HostNote.objects.exists()  # the demo's host logged its cache lines
    assert Warning.objects.exists()
    login_as("viewer")
    page.goto(live_server.url + reverse("dashboard:warnings"))

    groups = page.locator("tbody.warning-group")
    expect(groups.first).to_be_visible()
    expect(page.get_by_text("kv-unified")).to_have_count(0)
    first = groups.first.locator("tr.group")
    expect(first.locator(".badge")).to_have_text("warning")
    expect(first.locator("td").nth(5)).to_contain_text("$")  # the cost at stake
    screenshot("inbox")

    # A place opens its request.
    groups.first.locator("tr.place a").first.click()
    expect(page).to_have_url(re.compile(r"/requests/\d+/$"))


def test_a_session_page_reads_as_the_conversation_with_its_host_notes(
    live_server: Any, page: Any, login_as: Any, dsh_fleet: None, screenshot: Any
) -> None:
    session = Session.objects.filter(host_notes__isnull=False).order_by("-event_count").first()
    assert session is not None
    login_as("viewer")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(live_server.url + session.get_absolute_url())
    screenshot("session")
    # Shorter than the 5,900 px a session page took when its timeline was one raw row per event.
    assert page.evaluate("document.documentElement.scrollHeight") < 5900

    timeline = page.locator("#event-timeline")
    expect(timeline.locator(".tl-user").first).to_be_visible()
    reply = timeline.locator(".tl-assistant", has_text="chunk").first
    expect(reply).to_be_visible()
    json = reply.locator("pre").first
    expect(json).to_be_hidden()
    reply.locator("summary").click()
    expect(json).to_be_visible()  # the raw JSON, one click away
    expect(json).to_contain_text('"chunk"')

    notes = page.locator("#host-notes")
    expect(notes.locator("li").first).to_contain_text("kv-unified")
    notes.get_by_label("Search").fill("no such line")
    expect(notes.locator(".empty")).to_be_visible()
    notes.get_by_label("Search").fill("")
    expect(notes.locator("li").first).to_be_visible()
    # Typed at human speed, each pause refreshes the results: none of them may drop the box's text.
    notes.get_by_label("Search").press_sequentially("kv-un", delay=400)
    expect(notes.get_by_label("Search")).to_have_value("kv-un")
    expect(notes.get_by_label("Search")).to_be_focused()
    expect(notes.locator("li").first).to_contain_text("kv-un")

    items = timeline.locator("li.tl")
    before = items.count()
    more = page.locator("#timeline-more a")
    if more.count():
        more.click()
        expect(items).not_to_have_count(before)
    screenshot("session-more")
