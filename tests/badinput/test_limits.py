"""The shared input limits, as files meet them: each out-of-range value is a line error naming the
field and the bound, and the rest of the file is still read."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.ingest.files import ingest_paths
from dashboard.models import Event, Request, Session
from projections.formats.reading.limits import EARLIEST_TIME, LATEST_TIME, MAX_SEQ, MAX_SOURCE_SEQS
from projections.formats.reading.times import parse_time
from tests.dashboard.logs import dsh_lines

pytestmark = pytest.mark.django_db


def _write(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _dsh_log(folder: Path, session_id: str, change: dict[str, Any], line: int = 3) -> Path:
    """A valid dsh log whose ``line``-th line (1-based) has the fields of ``change`` set."""
    rows = dsh_lines(session_id, turns=2)
    rows[line - 1] = {**rows[line - 1], **change}
    return _write(folder / session_id / "session.jsonl", rows)


def _error_on(summary_errors: list[Any], field: str) -> Any:
    (error,) = [e for e in summary_errors if e.field == field]
    return error


def test_a_seq_past_the_stored_column_is_a_line_error_naming_the_limit(tmp_path: Path) -> None:
    rows = dsh_lines("big-seq", turns=2)
    rows.append({**rows[-1], "seq": MAX_SEQ + 1})
    path = _write(tmp_path / "big-seq" / "session.jsonl", rows)
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "seq")
    assert error.path == str(path)
    assert error.line == len(rows)
    assert str(MAX_SEQ) in error.reason
    assert Event.objects.filter(session__external_id="big-seq").count() == len(rows) - 2


def test_a_huge_source_range_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    path = _dsh_log(tmp_path, "wide-sources", {"sourceEventSeqs": [[0, 10_000_000]]})
    started = time.monotonic()
    summary = ingest_paths(paths=[path], source_name="fleet")
    assert time.monotonic() - started < 5
    error = _error_on(summary.errors, "sourceEventSeqs")
    assert error.line == 3
    assert "not before this event's seq" in error.reason


def test_source_seqs_past_the_cap_are_refused_even_below_the_events_seq(tmp_path: Path) -> None:
    rows = dsh_lines("many-sources", turns=2)
    rows.append({**rows[-1], "seq": MAX_SOURCE_SEQS + 10, "sourceEventSeqs": [[0, MAX_SOURCE_SEQS + 1]]})
    path = _write(tmp_path / "many-sources" / "session.jsonl", rows)
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "sourceEventSeqs")
    assert str(MAX_SOURCE_SEQS) in error.reason


def test_sources_before_the_event_are_still_read(tmp_path: Path) -> None:
    path = _dsh_log(tmp_path, "fine-sources", {"sourceEventSeqs": [[0, 1]]}, line=4)
    summary = ingest_paths(paths=[path], source_name="fleet")
    assert not summary.errors
    assert Event.objects.get(session__external_id="fine-sources", seq=2).source_event_seqs == [0, 1]


@pytest.mark.parametrize("created_at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:00-05:00"])
def test_a_header_time_outside_the_datetime_range_refuses_the_session_by_name(
    created_at: str, tmp_path: Path
) -> None:
    path = _dsh_log(tmp_path, "old-header", {"createdAt": created_at}, line=1)
    later = _write(tmp_path / "later" / "session.jsonl", dsh_lines("later", turns=1))
    summary = ingest_paths(paths=[path, later], source_name="fleet")
    error = _error_on(summary.errors, "session")
    assert "createdAt" in error.reason
    assert Session.objects.filter(external_id="later").exists()


def test_an_event_time_past_the_range_after_its_offset_is_a_line_error(tmp_path: Path) -> None:
    path = _dsh_log(tmp_path, "late-event", {"time": "9999-12-31T23:59:00-05:00"})
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "time")
    assert error.line == 3
    assert "outside" in error.reason


def test_times_inside_the_range_parse_and_the_edges_do_not() -> None:
    assert parse_time("2026-01-31T12:00:00+05:00").hour == 7
    for text in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"):
        with pytest.raises(ValueError, match="outside"):
            parse_time(text)
    assert parse_time("0001-01-03T00:00:00Z") > EARLIEST_TIME
    assert parse_time("9999-12-29T00:00:00Z") < LATEST_TIME


def test_a_trace_body_nested_thousands_deep_is_a_line_error_and_the_next_line_is_read(tmp_path: Path) -> None:
    def record(body: Any, request_id: str) -> dict[str, Any]:
        return {
            "request": {
                "timestamp": 1748554704.25,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {},
                "body": body,
            },
            "response": {
                "status_code": 200,
                "headers": {"request-id": request_id},
                "body": {"usage": {"input_tokens": 3}},
            },
            "logged_at": "2025-05-29T23:38:25Z",
        }

    deep = '{"model": "m", "messages": ' + "[" * 5000 + "]" * 5000 + "}"
    good = {
        "model": "claude-sonnet-4-5",
        "tools": [{"name": "t"}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = _write(
        tmp_path / ".claude-trace" / "log-deep.jsonl", [record(deep, "req_deep"), record(good, "req_good")]
    )
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "request.body")
    assert error.line == 1
    assert "nested" in error.reason
    assert list(Request.objects.values_list("key", flat=True)) == ["req_good"]


@pytest.mark.parametrize(
    ("number", "words"), [(b"1e400", "out of range"), (b"NaN", "NaN"), (b"-Infinity", "Infinity")]
)
def test_a_number_no_store_holds_is_a_line_error(number: bytes, words: str, tmp_path: Path) -> None:
    rows = dsh_lines("odd-number", turns=1)
    path = tmp_path / "odd-number" / "session.jsonl"
    path.parent.mkdir()
    lines = [json.dumps(row).encode() for row in rows]
    lines[3] = lines[3].replace(b'"turn": 1', b'"turn": ' + number, 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "json")
    assert error.line == 4
    assert words in error.reason


def test_an_event_type_longer_than_its_column_is_a_line_error(tmp_path: Path) -> None:
    path = _dsh_log(tmp_path, "long-type", {"type": "x/" + "y" * 200, "ignorable": True})
    summary = ingest_paths(paths=[path], source_name="fleet")
    error = _error_on(summary.errors, "type")
    assert error.line == 3
    assert "80" in error.reason
