"""End to end over the real agent logs beside the checkout (skipped where they are absent)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from django.db.models import Sum

from dashboard.ingest.files import ingest_paths
from dashboard.models import Session

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


def count_calls(path: Path) -> dict[str, int]:
    """Totals of one transcript counted independently: one call per message.id + requestId, input and
    cache fields from any line of the call, output from its largest line; <synthetic> is no call."""
    calls: dict[tuple[str, str], dict[str, int]] = {}
    outputs: dict[tuple[str, str], int] = defaultdict(int)
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        usage = message.get("usage")
        if record.get("type") != "assistant" or not usage or message.get("model") == "<synthetic>":
            continue
        key = (message["id"], record.get("requestId", ""))
        calls[key] = {
            "input": usage.get("input_tokens", 0),
            "write": usage.get("cache_creation_input_tokens", 0),
            "read": usage.get("cache_read_input_tokens", 0),
        }
        outputs[key] = max(outputs[key], usage.get("output_tokens", 0))
    return {
        "requests": len(calls),
        "input": sum(c["input"] for c in calls.values()),
        "write": sum(c["write"] for c in calls.values()),
        "read": sum(c["read"] for c in calls.values()),
        "output": sum(outputs.values()),
    }


def test_every_shared_file_ingests_without_an_error(shared_data: Path) -> None:
    summary = ingest_paths(
        paths=[shared_data / "claude-code", shared_data / "claude-trace"], source_name="shared"
    )
    assert summary.errors == []
    assert summary.sessions_added >= 9


def test_claude_code_totals_equal_one_call_per_message_and_request_id(shared_data: Path) -> None:
    ingest_paths(paths=[shared_data / "claude-code"], source_name="shared")
    files = sorted((shared_data / "claude-code").rglob("*.jsonl"))
    assert len(files) == 6
    for path in files:
        stored = Session.objects.filter(
            source_path__endswith=str(path.relative_to(shared_data.parent))
        ).aggregate(
            requests=Sum("request_count"),
            input=Sum("uncached_input_tokens"),
            write=Sum("cache_write_tokens"),
            read=Sum("cache_read_tokens"),
            output=Sum("output_tokens"),
        )
        assert stored == count_calls(path), path.name


def test_ingesting_the_shared_files_twice_changes_nothing(shared_data: Path) -> None:
    ingest_paths(paths=[shared_data], source_name="shared")
    before = list(
        Session.objects.values_list("external_id", "event_count", "request_count", "cache_read_tokens")
    )
    again = ingest_paths(paths=[shared_data], source_name="shared")
    assert (again.sessions_added, again.events_added, again.requests_added) == (0, 0, 0)
    after = list(
        Session.objects.values_list("external_id", "event_count", "request_count", "cache_read_tokens")
    )
    assert after == before
