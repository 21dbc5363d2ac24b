from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from dashboard.demo import write_demo_dataset
from dashboard.ingest.context_backfill import FIGURE_FIELDS, context_backfill
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request


@pytest.fixture
def ingested(db: None, tmp_path: Path) -> None:
    """A claude-trace file and a Claude Code transcript (with a compaction) from the demo dataset."""
    manifest = write_demo_dataset(tmp_path)
    for log_format in ("claude-trace", "claude-code"):
        entry = next(e for e in manifest.files if e.format == log_format and "subagents" not in e.path)
        ingest_paths(paths=[tmp_path / entry.path], source_name="demo")


def figures() -> dict[int, tuple[object, ...]]:
    return {row[0]: row[1:] for row in Request.objects.values_list("pk", *FIGURE_FIELDS)}


def test_a_backfill_gives_old_requests_the_figures_ingest_gives_new_ones(ingested: None) -> None:
    fresh = figures()
    assert any(row[1] for row in fresh.values())  # some requests were priced from a body
    Request.objects.update(**dict.fromkeys(FIGURE_FIELDS))
    summary = context_backfill()
    assert (summary.requests, summary.unmatched, summary.errors) == (len(fresh), 0, [])
    assert summary.sessions == 2
    assert figures() == fresh


def test_a_backfill_leaves_requests_that_have_their_figures_alone(ingested: None) -> None:
    assert context_backfill().requests == 0


def test_the_command_reports_what_it_filled(ingested: None) -> None:
    Request.objects.update(event_seq=None)
    out = io.StringIO()
    call_command("backfill_context", stdout=out)
    assert f"{Request.objects.count()} requests in 2 sessions" in out.getvalue()
    assert not Request.objects.filter(event_seq__isnull=True).exists()
