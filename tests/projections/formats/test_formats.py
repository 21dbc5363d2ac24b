from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from projections.formats import FORMAT_NAMES, detect_format, read_sessions
from projections.normalized import FormatError
from tests.projections.formats.conftest import FIXTURES, header, jsonl, zstd_frames


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (FIXTURES / "claude-code" / "proj" / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl", "claude-code"),
        (FIXTURES / "log-2025-05-29-23-38-24.jsonl", "claude-trace"),
        (FIXTURES / "llm-calls.2026-03-01T12-00-00-000Z.jsonl", "connectome"),
        (FIXTURES / "openai-chat.jsonl", "openai-capture"),
        (FIXTURES / "openai-responses.jsonl", "openai-capture"),
        (FIXTURES / "anthropic-capture.jsonl", "anthropic-capture"),
    ],
)
def test_formats_are_detected_from_the_first_record(path: Path, expected: str) -> None:
    assert detect_format(path) == expected
    assert expected in FORMAT_NAMES


def test_dsh_is_detected_plain_and_zstd(write: Any) -> None:
    assert detect_format(write("x.jsonl", jsonl([header()]))) == "dsh"
    assert detect_format(write("y.bin", b"".join(zstd_frames([[header()]])))) == "dsh"


def test_an_unknown_file_named_explicitly_is_a_format_error_naming_it(write: Any) -> None:
    path = write("notes.jsonl", b'{"hello": "world"}\n')
    with pytest.raises(FormatError, match=r"notes\.jsonl.*unknown log format"):
        list(read_sessions(path))


def test_a_file_that_is_not_json_lines_is_a_format_error(write: Any) -> None:
    with pytest.raises(FormatError, match="not a JSON-lines log"):
        detect_format(write("README", b"# Title\n"))


def test_a_missing_path_and_an_unknown_forced_format_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no such file"):
        list(read_sessions(tmp_path / "absent.jsonl"))
    with pytest.raises(FormatError, match="unknown format 'yaml'"):
        list(read_sessions(tmp_path, format="yaml"))


def test_a_forced_format_skips_detection(write: Any) -> None:
    path = write("capture.jsonl", FIXTURES.joinpath("anthropic-capture.jsonl").read_bytes())
    (session,) = list(read_sessions(path, format="anthropic-capture"))
    assert session.format == "anthropic-capture"


def test_a_mixed_folder_detects_each_file_and_keeps_unknown_logs_visible(write: Any, tmp_path: Path) -> None:
    write("a/session.jsonl", jsonl([header(session_id="dsh-1")]))
    write("b/trace.jsonl", FIXTURES.joinpath("log-2025-05-29-23-38-24.jsonl").read_bytes())
    write("c/odd.jsonl", b'{"hello": 1}\n')
    write("c/.DS_Store", b"\x00\x01")
    write("c/notes.txt", b"text")
    found = [(s.format, s.external_id, bool(s.fatal)) for s in read_sessions(tmp_path)]
    assert found == [("dsh", "dsh-1", False), ("claude-trace", "trace", False), ("unknown", "odd", True)]
