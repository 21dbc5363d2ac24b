from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.dashboard.logs import clock_log, write_jsonl
from tests.dashboard.test_analysis import conversation

pytestmark = pytest.mark.django_db  # --json reads the price table

PLACE = {"number", "lineage", "model", "markers_sent", "markers", "read_from"}
VERDICT = {
    "detail",
    "remedy",
    "material",
    "badge",
    "meaning",
    "warnings",
    "provider_diagnosis",
    "client_version",
}
MONEY = {"cost_usd", "miss_cost_usd"}
"""Read from the price table: each request's cost and miss cost at list price."""
FIGURES = {"credited", "wire_allows", "reported_read", "reported_write", "predicted_read", "predicted_write"}


def cache_controls(value: Any) -> int:
    """How many ``cache_control`` fields a request body holds, at any depth."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(cache_controls(v) for v in value.values())
    if isinstance(value, list):
        return sum(cache_controls(v) for v in value)
    return 0


def explain(*args: str) -> str:
    out = StringIO()
    call_command("explain", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def explain_json(path: Path, *args: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = json.loads(explain(str(path), "--json", *args))
    return result


def test_explain_prints_one_object_per_request_in_order(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", conversation())
    rows = explain_json(path)

    assert [row["number"] for row in rows] == [1, 2, 3]
    for row in rows:
        assert set(row) == PLACE | {"first_change", "figures", "label"} | VERDICT | MONEY
        assert set(row["figures"]) == FIGURES
    assert rows[0]["first_change"] is None
    assert rows[0]["figures"]["wire_allows"] is None  # nothing before it: unknown, not 0
    assert rows[1]["markers"] == [
        {"ordinal": 0, "position": 1, "tier": "system", "prefix_tokens": 1689, "status": "kept"},
        {"ordinal": 1, "position": 2, "tier": "messages", "prefix_tokens": 1700, "status": "kept"},
    ]
    assert rows[1]["figures"]["predicted_read"] == rows[1]["figures"]["reported_read"] == 1700
    assert rows[2]["first_change"] == {"position": 2, "tier": "messages", "cause": "edited"}
    assert rows[2]["label"] == "prefix-changed@messages:2"


def test_explain_lists_the_markers_each_request_sent_even_the_first_of_its_lineage(tmp_path: Path) -> None:
    records = conversation()
    # The last request also asks for the automatic breakpoint with a top-level cache_control.
    records[2]["request"]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    rows = explain_json(write_jsonl(tmp_path / "capture.jsonl", records))

    assert [len(row["markers_sent"]) for row in rows] == [cache_controls(r["request"]) for r in records]
    assert rows[0]["markers"] == []  # nothing before it to keep or lose
    assert rows[0]["markers_sent"] == [
        {
            "ordinal": 0, "tier": "system", "position": 1, "identity": "system:0",
            "prefix_tokens": rows[1]["markers"][0]["prefix_tokens"], "ttl": "5m", "automatic": False,
        },
        {
            "ordinal": 1, "tier": "messages", "position": 2, "identity": "messages:#0.0",
            "prefix_tokens": rows[1]["markers"][1]["prefix_tokens"], "ttl": "5m", "automatic": False,
        },
    ]  # fmt: skip
    automatic = rows[2]["markers_sent"][-1]
    assert (automatic["ttl"], automatic["automatic"]) == ("1h", True)


def test_explain_prints_a_table_without_json(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", conversation())
    table = explain(str(path))
    assert "session capture" in table
    assert "first change at messages:2 (edited)" in table
    assert "marker 1 at 4 (messages, 1730 tokens): broken" in table
    assert "sent marker 0 at 1 (system, 5m" in table


def test_explain_refuses_a_file_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(CommandError, match=r"notes\.jsonl: format: unknown log format"):
        explain(str(path))


@pytest.mark.shared_data
def test_every_claude_trace_request_lists_as_sent_each_cache_control_of_its_body(shared_data: Path) -> None:
    logs = sorted((shared_data / "claude-trace").glob("*.jsonl"))
    assert logs
    for path in logs:
        bodies = [json.loads(line)["request"]["body"] for line in path.read_text().splitlines() if line]
        rows = explain_json(path)
        assert [row["number"] for row in rows] == list(range(1, len(bodies) + 1))
        assert [len(row["markers_sent"]) for row in rows] == [cache_controls(b) for b in bodies], path.name
        assert any(row["markers_sent"] and not row["markers"] for row in rows)  # a lineage's first


@pytest.mark.shared_data
def test_explain_on_the_claude_trace_sample_predicts_every_read(shared_data: Path) -> None:
    rows = explain_json(shared_data / "claude-trace" / "log-sample.jsonl")

    haiku = [row for row in rows if "haiku" in row["model"]]
    sonnet = [row for row in rows if "sonnet" in row["model"]]
    assert haiku
    assert sonnet
    for row in haiku:
        assert row["label"] in ("below-minimum", "no-breakpoint")
        assert (row["figures"]["predicted_read"], row["figures"]["predicted_write"]) == (0, 0)
    for row in sonnet:
        figures = row["figures"]
        assert figures["predicted_read"] == figures["reported_read"]
        assert figures["predicted_write"] == figures["reported_write"]
        assert row["label"] is None


def test_explain_prints_each_requests_verdict_under_its_row(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "capture.jsonl", conversation())
    edited = explain_json(path)[2]

    assert edited["remedy"].startswith("A message already sent was edited in place")
    assert edited["detail"] == "first change at messages position 2"
    assert (edited["material"], edited["warnings"]) == (False, [])  # a few dozen tokens re-processed
    table = explain(str(path))
    assert f"verdict: {edited['label']} — {edited['detail']}" in table
    assert f"remedy: {edited['remedy']}" in table


def test_explain_json_gives_every_request_its_cost_and_miss_cost(tmp_path: Path) -> None:
    out = StringIO()
    call_command("explain", str(clock_log(tmp_path)), "--json", stdout=out, stderr=StringIO())
    rows = json.loads(out.getvalue())

    # Request 1: 8,500 written at $3.75 and 200 output at $15; a cold start misses nothing.
    assert rows[0]["cost_usd"] == pytest.approx(0.031875 + 0.003)
    assert rows[0]["miss_cost_usd"] == 0
    # Request 2 wrote again the 8,500 tokens request 1 had cached: 8,500 x (3.75 - 0.30).
    assert rows[1]["cost_usd"] == pytest.approx(9_300 * 3.75 / 1e6 + 0.003)
    assert rows[1]["miss_cost_usd"] == pytest.approx(8_500 * 3.45 / 1e6)
    assert all(isinstance(row["cost_usd"], float) for row in rows)
