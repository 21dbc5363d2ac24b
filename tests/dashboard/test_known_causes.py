"""Compactions and Claude Code's attribution block on the pages: counted, explained and priced per
request, per session and across the fleet."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import ModelPrice, Request, Session
from dashboard.templatetags.cachescope import usd
from tests.projections.cache.claude_code_traffic import (
    MODEL,
    THIRD_PARTY_URL,
    billing,
    capture,
    claude_code_body,
    compaction_captures,
    split,
    tools_tokens,
    turns,
    write_captures,
)

pytestmark = pytest.mark.django_db


def analysed(path: Path) -> list[Session]:
    """The file's sessions stored and analysed, each in the order it was written."""
    ingest_paths(paths=[path], source_name="laptop")
    sessions = list(Session.objects.order_by("started_at", "pk"))
    for session in sessions:
        session_analyse(session_id=session.pk)
    return sessions


def write_price() -> Decimal:
    return ModelPrice.objects.get(pattern="claude-sonnet-4-5").cache_write_5m


def test_the_session_page_counts_a_compaction_seen_in_the_requests(
    tmp_path: Path, viewer_client: Client
) -> None:
    (session,) = analysed(write_captures(tmp_path / "trace.jsonl", compaction_captures()))

    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()

    figure = page.split('id="session-compactions"')[1].split("</div>")[0]
    assert '<span class="value"' in figure
    assert ">1 · $" in figure
    assert "1 compaction seen in the requests" in page
    assert 'id="compaction-saving"' in page


def test_the_summarising_calls_page_prices_what_reading_the_main_thread_would_have_saved(
    tmp_path: Path, viewer_client: Client
) -> None:
    analysed(write_captures(tmp_path / "trace.jsonl", compaction_captures()))
    call = Request.objects.get(key="compact")
    restart = Request.objects.get(key="restart")
    price = ModelPrice.objects.get(pattern="claude-sonnet-4-5")
    note = call.analysis.data["compaction"]
    saving = (
        note["rewritten"] * (price.cache_write_5m - price.cache_read)
        + (note["reprocessed"] - note["rewritten"]) * (price.input - price.cache_read)
    ) / Decimal(1_000_000)

    page = viewer_client.get(reverse("dashboard:request", args=[call.pk])).content.decode()
    after = viewer_client.get(reverse("dashboard:request", args=[restart.pk])).content.decode()

    assert call.current_lineage == "compaction"
    reading = note["reprocessed"] * price.cache_read / Decimal(1_000_000)
    assert f"would have cost {usd(reading)}, and saved {usd(saving)} on this call" in page
    assert "compacted" in after
    assert "append corrections" not in after


def test_the_attribution_block_is_priced_per_session_and_per_endpoint_across_the_fleet(
    tmp_path: Path, viewer_client: Client
) -> None:
    history = turns("fireworks", 5)
    first = claude_code_body(history[:3], attribution=billing("c8e", "36ee5"), mark_tools=False)
    second = claude_code_body(history, attribution=billing("c8e", "0aaa9"), mark_tools=False)
    one = claude_code_body(turns("capital of France", 1), attribution=billing("a3f", "11111"))
    other = claude_code_body(turns("three primes", 1), attribution=billing("e91", "22222"))
    records = [
        capture(first, split(first, read=0), key="r0", seconds=0, url=THIRD_PARTY_URL, session="fw"),
        capture(second, split(second, read=0), key="r1", seconds=30, url=THIRD_PARTY_URL, session="fw"),
        capture(one, split(one, read=0), key="a0", seconds=40, session="one"),
        capture(other, split(other, read=tools_tokens(other)), key="b0", seconds=48, session="two"),
    ]
    analysed(write_captures(tmp_path / "calls.jsonl", records))
    third_party = Request.objects.get(key="r1").analysis.data["attribution"]
    first_party = Request.objects.get(key="b0").analysis.data["attribution"]
    assert third_party["rewritten"] > 0
    assert first_party["rewritten"] > 0

    session = Session.objects.get(external_id="fw")
    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()
    overview = viewer_client.get(reverse("dashboard:overview"), {"range": "all"}).content.decode()

    table = page.split('id="attribution-endpoints"')[1].split("</table>")[0]
    assert "<code>api.fireworks.ai</code>" in table
    assert usd(third_party["rewritten"] * write_price() / Decimal(1_000_000)) in table
    assert "CLAUDE_CODE_ATTRIBUTION_HEADER=0" in table
    fleet = overview.split('id="fleet-attribution"')[1].split("</section>")[0]
    assert "<code>api.fireworks.ai</code>" in fleet
    assert "<code>api.anthropic.com</code>" in fleet
    assert usd(first_party["rewritten"] * write_price() / Decimal(1_000_000)) in fleet


def test_the_request_page_prices_the_attribution_block_and_names_the_remedy(
    tmp_path: Path, viewer_client: Client
) -> None:
    one = claude_code_body(turns("capital of France", 1), attribution=billing("a3f", "11111"))
    other = claude_code_body(turns("three primes", 1), attribution=billing("e91", "22222"))
    records = [
        capture(one, split(one, read=0), key="a0", seconds=0, session="one"),
        capture(other, split(other, read=tools_tokens(other)), key="b0", seconds=8, session="two"),
    ]
    analysed(write_captures(tmp_path / "calls.jsonl", records))
    call = Request.objects.get(key="b0")
    rewritten = call.analysis.data["attribution"]["rewritten"]

    page = viewer_client.get(reverse("dashboard:request", args=[call.pk])).content.decode()

    assert call.analysis.cause == "attribution-changed"
    assert f"cost {usd(rewritten * write_price() / Decimal(1_000_000))} here" in page
    assert "CLAUDE_CODE_ATTRIBUTION_HEADER=0" in page
    assert MODEL in page
