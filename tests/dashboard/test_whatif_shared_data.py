"""The what-if over the real agent logs beside the checkout (skipped where they are absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dashboard.ingest.files import ingest_paths
from dashboard.models import Session
from dashboard.savings.refresh import file_whatif

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


def test_the_claude_trace_sample_is_replayed_exactly_from_its_bodies(shared_data: Path) -> None:
    found = file_whatif(path=shared_data / "claude-trace" / "log-sample.jsonl")
    ((_, whatif),) = found.sessions
    recorded = whatif.result("as-recorded")
    assert recorded.reported_tokens == recorded.tokens  # the rules explain every reported read and write
    assert whatif.result("rolling-breakpoint").supported
    assert whatif.result("no-attribution-block").supported is False  # Claude Code 1.0.6 sends no block
    best = whatif.result("best")
    assert best.cost is not None
    assert recorded.cost is not None
    assert best.cost <= recorded.cost


def test_a_real_claude_code_transcript_prices_the_1_hour_ttl_and_says_why_not_the_rest(
    shared_data: Path,
) -> None:
    found = file_whatif(path=shared_data / "claude-code" / "agent-db734024.jsonl")
    ((_, whatif),) = found.sessions
    rows = {row["scenario"]: row for row in whatif.to_json()}
    assert rows["ttl-1h"]["supported"] is True
    assert rows["as-recorded"]["rules_error_usd"] == 0
    for name in ("stable-prefix", "rolling-breakpoint", "no-attribution-block"):
        assert rows[name]["supported"] is False
        assert "without request bodies" in str(rows[name]["reason"])


def test_a_real_claude_code_transcript_s_session_page_prices_the_1_hour_ttl_and_says_why_not_the_rest(
    shared_data: Path, viewer_client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        summary = ingest_paths(
            paths=[shared_data / "claude-code" / "agent-db734024.jsonl"], source_name="laptop"
        )
    assert not summary.errors, summary.errors
    session = Session.objects.get()

    html = viewer_client.get(session.get_absolute_url()).content.decode()

    panel = html.split('id="session-fixes"', 1)[1].split("</section>", 1)[0]
    assert '<tr data-scenario="ttl-1h">' in panel
    for name in ("stable-prefix", "rolling-breakpoint", "no-attribution-block"):
        item = panel.split(f'<li data-scenario="{name}">', 1)[1].split("</li>", 1)[0]
        assert "without request bodies" in item
