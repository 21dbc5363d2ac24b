from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from dashboard.demo import write_demo_dataset
from projections.folds.breakdown import ContextBreakdownV5, ContextBreakdownV6
from projections.folds.fold import fold
from projections.formats import read_sessions
from projections.normalized import EventRecord
from projections.synthetic import LogBuilder
from tests.dashboard.logs import BASE_MS, dsh_lines, write_jsonl
from tests.dashboard.test_folds import bad_claim_log
from tests.dashboard.test_refold import unmetered_rewrite_log


def dsh_file(path: Path, events: list[EventRecord]) -> Path:
    """A dsh log file holding ``events``."""
    lines: list[dict[str, Any]] = [dsh_lines("cmd-session", turns=0)[0]]
    for event in events:
        line: dict[str, Any] = {
            "type": event.type,
            "seq": event.seq,
            "time": BASE_MS + event.seq,
            "data": dict(event.data),
        }
        if event.surface_op is not None:
            line["surfaceOp"] = event.surface_op
        if event.source_event_seqs is not None:
            line["sourceEventSeqs"] = list(event.source_event_seqs)
        lines.append(line)
    return write_jsonl(path, lines)


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("breakdown", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_prints_one_json_line_per_event(tmp_path: Path) -> None:
    log = unmetered_rewrite_log()
    out, _ = run(str(dsh_file(tmp_path / "session.jsonl", log.events)), "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["seq"] for line in lines] == [event.seq for event in log.events]
    assert lines[4]["type"] == "user/message"
    final = ContextBreakdownV6().view(fold(ContextBreakdownV6(), log.events))
    assert lines[-1] == {
        "seq": log.events[-1].seq,
        "type": "user/message",
        "systemTokens": final.system_tokens,
        "toolsTokens": 0,
        "messageTokens": final.message_tokens,
        "basis": "log",
    }


def test_it_folds_under_the_state_version_asked_for(tmp_path: Path) -> None:
    log = unmetered_rewrite_log()
    path = str(dsh_file(tmp_path / "session.jsonl", log.events))
    v5 = json.loads(run(path, "--json", "--state-version", "5")[0].splitlines()[-1])
    v6 = json.loads(run(path, "--json", "--state-version", "6")[0].splitlines()[-1])
    assert (
        v5["messageTokens"]
        == ContextBreakdownV5().view(fold(ContextBreakdownV5(), log.events)).message_tokens
    )
    assert v5 != v6


def test_a_fold_that_stops_ends_with_an_error_line_and_a_failure(tmp_path: Path) -> None:
    path = str(dsh_file(tmp_path / "session.jsonl", bad_claim_log().events))
    out = io.StringIO()
    with pytest.raises(CommandError, match="claim-range-mismatch"):
        call_command("breakdown", path, "--json", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["seq"] for line in lines[:-1]] == [0, 1, 2, 3, 4]
    assert "seq 5 (user/message): claim-range-mismatch" in lines[-1]["error"]
    assert "cmd-session" in lines[-1]["error"]


def test_it_prints_a_table_without_json(tmp_path: Path) -> None:
    log = LogBuilder()
    log.system("be brief")
    log.user("hello")
    out, _ = run(str(dsh_file(tmp_path / "session.jsonl", log.events)))
    assert out.splitlines()[0].split() == [
        "seq",
        "type",
        "system",
        "tools",
        "messages",
        "inferred",
        "provider",
        "window",
    ]
    assert out.splitlines()[2].split()[:2] == ["1", "user/message"]


def test_it_refuses_an_unknown_state_version(tmp_path: Path) -> None:
    path = str(dsh_file(tmp_path / "session.jsonl", LogBuilder().events))
    with pytest.raises(CommandError, match="no state version 3"):
        run(path, "--state-version", "3")


def test_it_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a file"):
        run(str(tmp_path / "absent.jsonl"))


def test_it_needs_no_database(tmp_path: Path) -> None:
    # No django_db mark: any query would fail this test.
    log = LogBuilder()
    log.user("hi")
    out, _ = run(str(dsh_file(tmp_path / "session.jsonl", log.events)), "--json")
    assert json.loads(out)["messageTokens"] > 0


@pytest.mark.parametrize(("positional", "compact"), [(5, 6), (7, 8)])
def test_every_demo_dsh_log_folds_alike_under_a_positional_and_a_compact_version_but_for_the_documented_drift(
    tmp_path: Path, positional: int, compact: int
) -> None:
    manifest = write_demo_dataset(tmp_path)
    logs = [tmp_path / entry.path for entry in manifest.files if entry.format == "dsh"]
    assert len(logs) >= 10
    drifted = 0
    for log in logs:
        v5 = [
            json.loads(line)
            for line in run(str(log), "--state-version", str(positional), "--json")[0].splitlines()
        ]
        v6 = [
            json.loads(line)
            for line in run(str(log), "--state-version", str(compact), "--json")[0].splitlines()
        ]
        assert [row["seq"] for row in v5] == [row["seq"] for row in v6], log
        drifting = _unmetered_message_replacements(log)
        drift = 0
        for a, b in zip(v5, v6, strict=True):
            assert (a["systemTokens"], a["toolsTokens"]) == (b["systemTokens"], b["toolsTokens"]), (
                log,
                a["seq"],
            )
            gap = a["messageTokens"] - b["messageTokens"]
            if a["seq"] not in drifting:
                # Only an unmetered message replacement may move the gap (the compact version folds it
                # at zero).
                assert gap == drift, (log, a["seq"])
            drift = gap
        drifted += drift != 0
    assert drifted == 1  # the demo's one log that cuts a tool result without a meter


def _unmetered_message_replacements(log: Path) -> set[int]:
    """Seqs of replacements that no metering event armed and that do not put a system prompt in."""
    seqs: set[int] = set()
    armed = False
    for imported in read_sessions(log):
        for item in imported.items:
            if not isinstance(item, EventRecord):
                continue
            replace = isinstance(item.surface_op, dict) and item.surface_op.get("op") == "replace"
            if replace and not armed and item.type != "system/message":
                seqs.add(item.seq)
            armed = item.type in ("compaction/summary", "compaction/prune")
    return seqs


def _demo_logs(tmp_path: Path, log_format: str) -> list[Path]:
    manifest = write_demo_dataset(tmp_path)
    return [tmp_path / entry.path for entry in manifest.files if entry.format == log_format]


def test_a_claude_trace_log_gives_each_request_its_own_system_and_tools(tmp_path: Path) -> None:
    logs = _demo_logs(tmp_path, "claude-trace")
    assert logs
    for log in logs:
        rows = [json.loads(line) for line in run(str(log), "--json")[0].splitlines()]
        requests = [row for row in rows if row["type"] == "cache/request"]
        assert len(requests) == len(rows) > 0, log
        with_tools = [row for row in requests if row["toolsTokens"] > 0]
        assert with_tools, log
        for row in with_tools:
            assert row["systemTokens"] > 0, (log, row)
            assert row["basis"] == "request body"
            assert row["providerPromptTokens"] > 0
            assert row["contextWindow"] >= 200_000


def test_a_capture_of_every_provider_prices_its_requests_from_their_bodies(tmp_path: Path) -> None:
    for log_format in ("anthropic-capture", "openai-capture", "connectome"):
        logs = _demo_logs(tmp_path / log_format, log_format)
        assert logs, log_format
        for log in logs:
            rows = [json.loads(line) for line in run(str(log), "--json")[0].splitlines()]
            assert rows, log
            assert all(row["basis"] == "request body" for row in rows), log
            assert any(row["messageTokens"] > 0 for row in rows), log


def within_the_target(row: dict[str, Any]) -> bool:
    """Whether a request row's bands add up to its provider's count within 0.5 % or 5 tokens."""
    shown = row["systemTokens"] + row["toolsTokens"] + row["messageTokens"]
    reported = row["providerPromptTokens"]
    return abs(shown - reported) <= max(5, reported * 0.005)


def test_request_body_bands_are_calibrated_to_the_provider_count_with_the_raw_estimate_kept(
    tmp_path: Path,
) -> None:
    for log_format in ("claude-trace", "anthropic-capture", "openai-capture", "connectome"):
        logs = _demo_logs(tmp_path / log_format, log_format)
        counted = []
        for log in logs:
            rows = [json.loads(line) for line in run(str(log), "--json")[0].splitlines()]
            counted += [row for row in rows if "providerPromptTokens" in row]
        assert counted, log_format
        for row in counted:
            assert within_the_target(row), (log_format, row)
            assert row["calibration"] == "provider count"
            raw = row["rawEstimate"]
            assert set(raw) == {"systemTokens", "toolsTokens", "messageTokens"}
        # The estimate alone would not have added up: calibration is what brings the bands to size.
        assert any(sum(row["rawEstimate"].values()) != row["providerPromptTokens"] for row in counted)


@pytest.mark.shared_data
def test_every_claude_trace_request_s_bands_add_up_to_the_provider_count_within_half_a_percent(
    shared_data: Path,
) -> None:
    logs = sorted((shared_data / "claude-trace").glob("*.jsonl"))
    assert logs
    for log in logs:
        lines = [line for line in log.read_text().splitlines() if line]
        rows = [json.loads(line) for line in run(str(log), "--json")[0].splitlines()]
        counted = [row for row in rows if "providerPromptTokens" in row]
        assert len(counted) == len(lines), log.name  # every request reported its prompt
        assert all(within_the_target(row) for row in counted), log.name
        assert not all(
            abs(sum(row["rawEstimate"].values()) - row["providerPromptTokens"]) <= 5 for row in counted
        )  # the raw estimate alone misses


def test_a_claude_code_transcript_infers_system_and_tools_and_never_prices_them_at_zero(
    tmp_path: Path,
) -> None:
    logs = _demo_logs(tmp_path, "claude-code")
    assert logs
    for log in logs:
        rows = [json.loads(line) for line in run(str(log), "--json")[0].splitlines()]
        assert all(row["systemTokens"] is None and row["toolsTokens"] is None for row in rows), log
        calls = [row for row in rows if "providerPromptTokens" in row]
        assert calls, log
        for call in calls:
            assert call["inferredSystemToolsTokens"] > 0, (log, call)
            assert call["contextWindow"] >= 200_000, (log, call)
