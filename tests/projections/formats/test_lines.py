from __future__ import annotations

from typing import Any

import zstandard

from projections.formats.reading.lines import LogLines
from tests.projections.formats.conftest import jsonl


def test_an_oversized_line_is_refused_and_the_next_line_is_read(write: Any) -> None:
    data = b'{"a": 1}\n' + b'{"b": "' + b"x" * 500 + b'"}\n' + b'{"c": 3}\n'
    with LogLines(write("log.jsonl", data), max_line_bytes=100) as log:
        lines = list(log.json_lines())
    assert [line.value for line in lines] == [{"a": 1}, None, {"c": 3}]
    error = lines[1].error
    assert error is not None
    assert (error.line, error.field) == (2, "line")
    assert "exceeds the 100-byte limit" in error.reason


def test_a_decompression_bomb_line_fails_clearly_without_being_held(write: Any) -> None:
    bomb = zstandard.ZstdCompressor().compress(b"x" * 5_000_000 + b"\n" + jsonl([{"after": True}]))
    with LogLines(write("log.jsonl.zstd", bomb), max_line_bytes=1_000_000) as log:
        lines = list(log.json_lines())
    assert lines[0].error is not None
    assert "5000001 bytes exceeds" in lines[0].error.reason
    assert lines[1].value == {"after": True}


def test_blank_lines_are_skipped_but_keep_their_numbers(write: Any) -> None:
    with LogLines(write("log.jsonl", b'{"a": 1}\n\n  \n{"b": 2}\n')) as log:
        assert [(line.number, line.value) for line in log.json_lines()] == [(1, {"a": 1}), (4, {"b": 2})]


def test_a_non_object_line_is_a_json_error(write: Any) -> None:
    with LogLines(write("log.jsonl", b'"text"\n')) as log:
        (line,) = list(log.json_lines())
    assert line.error is not None
    assert line.error.field == "json"
    assert "expected a JSON object" in line.error.reason
