from __future__ import annotations

import csv
import io
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from dashboard.models import Request

pytestmark = pytest.mark.e2e


def listed_ids(page: Any) -> list[int]:
    """The request ids of the rows the table shows, from each row's link to its request."""
    hrefs = page.locator("#request-table tbody tr td:nth-child(2) a").evaluate_all(
        "links => links.map(link => link.getAttribute('href'))"
    )
    return [int(href.strip("/").rsplit("/", 1)[1]) for href in hrefs]


def test_the_requests_list_filtered_by_label_and_sorted_by_re_processed_exports_what_it_shows(
    live_server: Any, page: Any, login_as: Any, ingest_demo_file: Any, screenshot: Any
) -> None:
    ingest_demo_file("claude-trace", "system-timestamp")
    ingest_demo_file("claude-trace", "ttl-expired")
    changed = Request.objects.filter(analysis__label__startswith="prefix-changed@")
    assert changed.count() >= 2, "the demo traces analyse to several prefix changes"
    assert Request.objects.exclude(analysis__label__startswith="prefix-changed@").exists()
    login_as("viewer")
    page.goto(live_server.url + "/requests/")

    table = page.locator("#request-table")
    # Choosing a label swaps the table in place (htmx) and puts the filter in the address.
    page.get_by_label("Miss label").select_option("prefix-changed")
    expect(page).to_have_url(re.compile(r"[?&]label=prefix-changed(&|$)"))
    expect(table.locator("tbody tr")).to_have_count(changed.count())
    expect(table).to_contain_text("matching these filters")

    # The Re-processed header sorts by that figure, largest first, and keeps the label filter.
    table.get_by_role("link", name="Re-processed").click()
    expect(table.locator("th[aria-sort=descending]")).to_contain_text("Re-processed")
    expect(page).to_have_url(re.compile(r"[?&]sort=-wasted(&|$)"))
    expect(page).to_have_url(re.compile(r"[?&]label=prefix-changed(&|$)"))
    shown = listed_ids(page)
    by_reprocessed = sorted(changed, key=lambda r: (-(r.analysis.wasted_tokens or 0), -r.pk))
    assert shown == [r.pk for r in by_reprocessed]
    for cell in ("Cause", "Predicted read", "Predicted write", "Cost"):
        expect(table.locator("thead")).to_contain_text(cell)
    screenshot("label-by-reprocessed")

    # Both exports hold exactly the rows shown, in the same order.
    with page.expect_download() as download_info:
        table.get_by_role("link", name="CSV").click()
    download = download_info.value
    assert download.suggested_filename.startswith("cachescope-requests-")
    query = parse_qs(urlsplit(download.url).query)
    assert (query["label"], query["sort"]) == (["prefix-changed"], ["-wasted"])
    with open(download.path(), encoding="utf-8") as exported:
        rows = list(csv.DictReader(io.StringIO(exported.read())))
    assert [int(row["request_id"]) for row in rows] == shown
    assert all(row["label"].startswith("prefix-changed@") for row in rows)
    json_href = table.get_by_role("link", name="JSON").get_attribute("href")
    response = page.request.get(live_server.url + json_href)
    assert response.ok
    assert [row["request_id"] for row in json.loads(response.text())] == shown
