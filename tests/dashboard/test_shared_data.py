"""End to end over the real agent logs beside the checkout (skipped where they are absent)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from django.db.models import Sum
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, RequestAnalysis, Session
from projections.cache.explain.verdict import verdict

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


COMPACTED_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"


def test_the_real_claude_code_compaction_is_named_with_what_each_request_cost(
    shared_data: Path, viewer_client: Client
) -> None:
    ingest_paths(paths=[shared_data / "claude-code"], source_name="shared")
    for session in Session.objects.order_by("pk"):
        session_analyse(session_id=session.pk)
    main = Session.objects.get(external_id=COMPACTED_SESSION)
    (restart,) = RequestAnalysis.objects.filter(session=main, label="compacted")
    (call,) = Request.objects.filter(session__external_id="agent-acompact-e1f845")

    said = verdict(restart.data, has_body=False)
    assert "append corrections" not in said.remedy
    assert restart.data["compaction"]["cached_before"] == 163_346 + 1_484  # the last call before it
    assert (restart.data["compaction"]["read"], restart.data["compaction"]["written"]) == (21_478, 14_600)
    # Claude Code 2.1.39's compaction subagent keeps the main thread's prefix and read all of it.
    assert call.lineage == "compaction"
    note = call.analysis.data["compaction"]
    assert (note["read"], note["written"], note["cached_before"], note["reprocessed"]) == (
        164_830,
        8_681,
        164_830,
        0,
    )
    assert call.analysis.label == ""
    page = viewer_client.get(reverse("dashboard:session", args=[main.pk])).content.decode()
    assert ">1 · $" in page.split('id="session-compactions"')[1].split("</div>")[0]
    subagent = viewer_client.get(reverse("dashboard:session", args=[call.session_id])).content.decode()
    assert "The parent&#x27;s context, re-sent" in subagent or "The parent's context, re-sent" in subagent
