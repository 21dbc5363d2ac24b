from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from projections.formats import read_sessions
from projections.formats.dsh import read_dsh_session
from tests.projections.formats.conftest import drain, event, header, jsonl, zstd_frames


@pytest.mark.parametrize("version", [0, 3, 4])
def test_known_header_versions_are_read(write: Any, version: int) -> None:
    path = write("a/session.jsonl", jsonl([header(version, cwd="/w", parentSession="p"), event(0), event(1)]))
    session = read_dsh_session(path)
    events, _, errors = drain(session)
    assert (session.external_id, session.format_version, session.cwd) == ("s-1", str(version), "/w")
    assert session.parent_external_id == "p"
    assert session.started_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert [e.seq for e in events] == [0, 1]
    assert errors == []
    assert session.fatal == ""


def test_unknown_header_version_is_refused_with_no_items(write: Any) -> None:
    path = write("s/session.jsonl", jsonl([header(2), event(0)]))
    session = read_dsh_session(path)
    assert "version" in session.fatal
    assert "2" in session.fatal
    assert list(session.items) == []


def test_missing_header_is_fatal(write: Any) -> None:
    path = write("s/session.jsonl", jsonl([event(0)]))
    session = read_dsh_session(path)
    assert "missing header" in session.fatal
    assert session.external_id == "s"
    assert list(session.items) == []


def test_event_time_accepts_epoch_ms_and_iso_and_is_utc(write: Any) -> None:
    rows = [header(), event(0), {**event(1), "time": "2026-01-02T04:00:00+01:00"}]
    events, _, _ = drain(read_dsh_session(write("session.jsonl", jsonl(rows))))
    assert events[0].time == datetime.fromtimestamp(1_767_000_000, tz=UTC)
    assert events[1].time == datetime(2026, 1, 2, 3, 0, tzinfo=UTC)


def test_packed_chunk_rows_expand_into_assistant_chunks(write: Any) -> None:
    packed = {
        "type": "text-chunks",
        "seq0": 1,
        "time0": 1000,
        "data": {"dt": [0, 5, 9], "chunks": ["a", "b", "c"]},
    }
    bare = {"type": "reasoning-chunks", "seq0": 4, "time0": 2000, "data": {"dt": [1]}}
    events, _, errors = drain(
        read_dsh_session(write("session.jsonl", jsonl([header(), event(0), packed, bare])))
    )
    assert errors == []
    chunks = events[1:]
    assert [(e.seq, e.type) for e in chunks] == [(i, "assistant/chunk") for i in range(1, 5)]
    assert [e.data for e in chunks] == [
        {"kind": "text", "chunk": "a"},
        {"kind": "text", "chunk": "b"},
        {"kind": "text", "chunk": "c"},
        {"kind": "reasoning"},
    ]
    assert [e.time for e in chunks][:3] == [
        datetime.fromtimestamp(t / 1000, tz=UTC) for t in (1000, 1005, 1009)
    ]


def test_harness_packed_rows_with_one_more_member_than_gaps_are_cumulative(write: Any) -> None:
    packed = {"type": "text-chunks", "seq0": 0, "time0": 10, "data": {"dt": [2, 3], "texts": ["H", "i", "!"]}}
    events, _, _ = drain(read_dsh_session(write("session.jsonl", jsonl([header(0), packed]))))
    assert [e.data["chunk"] for e in events] == ["H", "i", "!"]
    assert [e.time for e in events] == [datetime.fromtimestamp(t / 1000, tz=UTC) for t in (10, 12, 15)]


def test_packed_row_with_mismatched_chunks_is_a_line_error(write: Any) -> None:
    packed = {"type": "text-chunks", "seq0": 0, "time0": 10, "data": {"dt": [1], "chunks": ["a", "b", "c"]}}
    _, _, errors = drain(read_dsh_session(write("session.jsonl", jsonl([header(), packed]))))
    assert [(e.line, e.field) for e in errors] == [(2, "data.chunks")]


def test_unknown_ignorable_type_is_kept_and_session_stays_foldable(write: Any) -> None:
    rows = [header(), event(0), event(1, "vendor/thing", ignorable=True), event(2)]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    events, _, _ = drain(session)
    assert [e.type for e in events] == ["turn/start", "vendor/thing", "turn/start"]
    assert events[1].ignorable
    assert session.unfoldable == ""


def test_unknown_type_without_ignorable_marks_the_session_unfoldable(write: Any) -> None:
    rows = [header(), event(0), event(1, "vendor/thing"), event(2, "other/thing")]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    events, _, _ = drain(session)
    assert len(events) == 3
    assert session.unfoldable == "seq 1: unknown event type 'vendor/thing' without ignorable"


def test_cachescope_events_are_known(write: Any) -> None:
    session = read_dsh_session(write("session.jsonl", jsonl([header(), event(0, "cache/credit")])))
    drain(session)
    assert session.unfoldable == ""


def test_duplicate_seq_is_a_line_error_and_dropped(write: Any) -> None:
    rows = [header(), event(0), event(1), event(1), event(2)]
    events, _, errors = drain(read_dsh_session(write("session.jsonl", jsonl(rows))))
    assert [e.seq for e in events] == [0, 1, 2]
    assert [(e.line, e.field) for e in errors] == [(4, "seq")]


def test_seq_gap_is_a_line_error_and_marks_the_session_unfoldable(write: Any) -> None:
    rows = [header(), event(0), event(3), event(4)]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    events, _, errors = drain(session)
    assert [e.seq for e in events] == [0, 4]
    assert [(e.line, e.field) for e in errors] == [(3, "seq")]
    assert "gap" in errors[0].reason
    assert session.unfoldable.startswith("seq 3: gap")


def test_corrupted_lines_among_good_ones_are_exactly_the_ones_reported(write: Any) -> None:
    rows: list[Any] = [header(), event(0), '{"type": "turn/start", "seq": 1, "ti', event(2)]
    rows += [
        {**event(3), "time": "yesterday"},
        event(4),
        "[1, 2]",
        event(6),
        {**event(7), "surfaceOp": 5},
        event(8),
    ]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    events, _, errors = drain(session)
    assert [(e.line, e.field) for e in errors] == [(3, "json"), (5, "time"), (7, "json"), (9, "surfaceOp")]
    assert [e.seq for e in events] == [0, 2, 4, 6, 8]
    assert session.unfoldable == ""


def test_source_event_seq_ranges_expand(write: Any) -> None:
    replace = event(3, "user/message", surfaceOp={"op": "replace", "startSeq": 0, "endSeq": 2})
    replace["sourceEventSeqs"] = [[0, 2]]
    rows = [header(3), event(0), event(1), event(2), replace]
    events, _, errors = drain(read_dsh_session(write("session.jsonl", jsonl(rows))))
    assert errors == []
    assert events[3].source_event_seqs == (0, 1, 2)
    assert events[3].surface_op == {"op": "replace", "startSeq": 0, "endSeq": 2}


def test_unterminated_unparsable_last_line_is_a_crash_tail(write: Any) -> None:
    data = jsonl([header(), event(0)]) + b'{"type":"turn/st'
    session = read_dsh_session(write("session.jsonl", data))
    events, _, errors = drain(session)
    assert (len(events), errors) == (1, [])
    assert "line 3" in session.crash_tail


def test_multi_frame_zstd_reads_every_frame_with_stream_line_numbers(write: Any) -> None:
    frames = zstd_frames([[header()], [event(0), event(1)], [event(2)], ["not json", event(3)]])
    session = read_dsh_session(write("session.jsonl.zstd", b"".join(frames)))
    events, _, errors = drain(session)
    assert [e.seq for e in events] == [0, 1, 2, 3]
    assert [e.line for e in events] == [2, 3, 4, 6]
    assert [(e.line, e.field) for e in errors] == [(5, "json")]
    assert session.crash_tail == ""


def test_truncated_last_zstd_frame_is_a_crash_tail_and_earlier_frames_stay(write: Any) -> None:
    frames = zstd_frames([[header()], [event(0)], [event(1), event(2)]])
    data = b"".join(frames[:2]) + frames[2][: len(frames[2]) - 6]
    session = read_dsh_session(write("session.jsonl.zstd", data))
    events, _, errors = drain(session)
    assert [e.seq for e in events] == [0]
    assert errors == []
    assert "frame 2" in session.crash_tail
    assert f"offset {len(frames[0]) + len(frames[1])}" in session.crash_tail


def test_bad_checksum_in_a_complete_frame_is_corruption_and_stops_the_session(write: Any) -> None:
    frames = zstd_frames([[header()], [event(0)], [event(1)], [event(2)]])
    broken = bytearray(frames[2])
    broken[-1] ^= 0xFF
    data = frames[0] + frames[1] + bytes(broken) + frames[3]
    session = read_dsh_session(write("session.jsonl.zstd", data))
    events, _, errors = drain(session)
    assert [e.seq for e in events] == [0]
    assert len(errors) == 1
    assert errors[0].field == "zstd"
    assert f"frame 2 at byte offset {len(frames[0]) + len(frames[1])}" in errors[0].reason
    assert "checksum" in errors[0].reason


def test_read_sessions_walks_a_folder_of_dsh_sessions_and_skips_projection_caches(write: Any) -> None:
    write("one/session.jsonl", jsonl([header(session_id="one"), event(0)]))
    write("two/session.jsonl.zstd", b"".join(zstd_frames([[header(session_id="two")], [event(0)]])))
    write("two/session_projcache.json", b'{"identity": "two", "rows": {}}')
    write("README.md", b"# notes\n")
    root: Path = write("one/session.jsonl", jsonl([header(session_id="one"), event(0)])).parents[1]
    sessions = [(s.external_id, s.format) for s in read_sessions(root)]
    assert sessions == [("one", "dsh"), ("two", "dsh")]
