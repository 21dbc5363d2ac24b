"""Every bad input of the corpus read by the importers: a clear error naming file, line or seq, and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projections.formats import read_sessions
from projections.formats.reading.storable import MAX_JSON_DEPTH, TooDeep, decode_storable
from projections.normalized import EventRecord, LineError, LineNotice, RequestRecord, SessionImport
from tests.badinput.corpus import CASES, BadInput


def _read(case: BadInput) -> tuple[SessionImport, list[EventRecord], list[RequestRecord], list[LineError]]:
    sessions = list(read_sessions(case.path, format=case.format))
    assert len(sessions) == 1
    session = sessions[0]
    items = list(session.items)
    events = [i for i in items if isinstance(i, EventRecord)]
    requests = [i for i in items if isinstance(i, RequestRecord)]
    errors = [i for i in items if isinstance(i, LineError)]
    return session, events, requests, errors


BAD_LINES = (
    "truncated-line",
    "invalid-utf8",
    "deep-json",
    "seq-duplicate",
    "zstd-checksum",
    "transcript-conflicting-call",
    "transcript-bad-usage",
)
NOTICED_LINES = ("lone-surrogate", "nul-character", "seq-gap")
SESSION_LEVEL = tuple(sorted(set(CASES) - set(BAD_LINES) - set(NOTICED_LINES)))


@pytest.mark.parametrize("name", BAD_LINES)
def test_each_bad_line_is_reported_with_its_file_line_and_field(name: str, tmp_path: Path) -> None:
    case = CASES[name](tmp_path)
    assert case.where == "line-error"
    _, _, _, errors = _read(case)
    assert errors, f"{case.name}: no error reported"
    first = errors[0]
    assert (first.path, first.line, first.field) == (str(case.path), case.line, case.field)
    assert case.words in first.reason
    assert str(case.path) in str(first)
    assert f":{case.line}:" in str(first)


@pytest.mark.parametrize("name", SESSION_LEVEL)
def test_each_session_level_problem_names_the_seq_or_field(name: str, tmp_path: Path) -> None:
    case = CASES[name](tmp_path)
    session, events, _, errors = _read(case)
    if case.where == "fatal":
        assert f"{case.path}:{case.line}: {case.field}: {case.words}" in session.fatal
        assert not events
    elif case.where == "unfoldable":
        assert session.unfoldable.startswith(f"seq {case.seq}:")
        assert case.words in session.unfoldable
        assert not errors
    elif case.where == "crash-tail":
        assert session.crash_tail.startswith(f"line {case.line}:")
        assert case.words in session.crash_tail
        assert not errors
    elif case.where in ("clean", "fold-error", "render-warning"):
        # Readable logs: what is wrong with them shows later, in the fold or the request analysis.
        assert not errors
        assert not session.unfoldable
        assert not session.fatal
    else:
        pytest.fail(f"{name}: a bad line belongs in BAD_LINES")


def test_an_event_after_a_bad_line_keeps_its_seq_and_is_read(tmp_path: Path) -> None:
    case = CASES["truncated-line"](tmp_path)
    _, events, _, _ = _read(case)
    assert [e.seq for e in events] == [0, 1, 3, 4]


def test_a_repaired_line_is_kept_with_the_replacement_character(tmp_path: Path) -> None:
    case = CASES["nul-character"](tmp_path)
    _, events, _, errors = _read(case)
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert events[1].data["content"] == "question \ufffd 1"
    assert errors == []


@pytest.mark.parametrize("name", NOTICED_LINES)
def test_each_noticed_line_is_a_notice_naming_file_line_and_field_not_an_error(
    name: str, tmp_path: Path
) -> None:
    case = CASES[name](tmp_path)
    assert case.where == "line-notice"
    items = list(next(iter(read_sessions(case.path, format=case.format))).items)
    [notice] = [i for i in items if isinstance(i, LineNotice)]
    assert (notice.path, notice.line, notice.field) == (str(case.path), case.line, case.field)
    assert case.words in notice.reason
    assert f"{case.path}:{case.line}:" in str(notice)
    assert not [i for i in items if isinstance(i, LineError)]


def test_a_seq_gap_keeps_every_event_and_the_log_foldable(tmp_path: Path) -> None:
    case = CASES["seq-gap"](tmp_path)
    session, events, _, errors = _read(case)
    assert errors == []
    assert session.unfoldable == ""
    seqs = [e.seq for e in events]
    assert 3 not in seqs
    assert 4 in seqs
    assert seqs == sorted(set(seqs))


def test_an_ignorable_unknown_event_is_kept(tmp_path: Path) -> None:
    case = CASES["unknown-type-ignorable"](tmp_path)
    _, events, _, _ = _read(case)
    assert events[-1].type == "vendor/telemetry"
    assert events[-1].ignorable


def test_a_conflicting_call_is_counted_once_with_its_first_usage(tmp_path: Path) -> None:
    case = CASES["transcript-conflicting-call"](tmp_path)
    _, _, requests, _ = _read(case)
    assert len(requests) == 1
    assert requests[0].usage is not None
    assert requests[0].usage.cache_read == 1000


def test_bad_usage_leaves_the_call_without_usage_rather_than_wrong_usage(tmp_path: Path) -> None:
    case = CASES["transcript-bad-usage"](tmp_path)
    _, _, requests, errors = _read(case)
    assert [r.usage for r in requests] == [None, None]
    field, line, words = case.extra["second"]
    assert (errors[1].field, errors[1].line) == (field, line)
    assert words in errors[1].reason


def test_a_zstd_corruption_keeps_the_frames_before_it(tmp_path: Path) -> None:
    case = CASES["zstd-checksum"](tmp_path)
    _, events, _, _ = _read(case)
    assert [e.seq for e in events] == [0]


def test_nesting_just_past_the_limit_is_refused_below_the_recursion_limit() -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(TooDeep):
        decode_storable(deep.encode())
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert decode_storable(ok.encode()).repaired == ""


def test_an_escaped_surrogate_pair_is_a_character_not_a_repair() -> None:
    decoded = decode_storable(json.dumps({"text": "smile \U0001f600"}).encode())
    assert decoded.value == {"text": "smile \U0001f600"}
    assert decoded.repaired == ""


def test_unstorable_keys_are_repaired_too() -> None:
    decoded = decode_storable(b'{"a\\u0000b": {"c": ["\\udfff"]}}')
    assert decoded.value == {"a\ufffdb": {"c": ["\ufffd"]}}
    assert "1 U+0000" in decoded.repaired
    assert "1 lone surrogate" in decoded.repaired
