from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from projections.formats import read_sessions
from projections.formats.dsh.sessions import read_dsh_session
from projections.normalized import EventRecord, LineError, LineNotice
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


def test_a_header_created_at_the_epoch_leaves_the_start_unknown(write: Any) -> None:
    # The harness's test snapshots write createdAt 0 in place of the clock.
    path = write("a/session.jsonl", jsonl([header(createdAt=0), event(0)]))
    session = read_dsh_session(path)
    events, _, errors = drain(session)
    assert session.started_at is None
    assert [e.seq for e in events] == [0]
    assert errors == []


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


def packed_log(write: Any, row: dict[str, Any]) -> list[Any]:
    """The events of a log: ``turn/start`` at seq 0, the packed row, and an event after it."""
    after = event(row["seq0"] + len(row["data"].get("texts", row["data"].get("args", []))))
    events, _, errors = drain(
        read_dsh_session(write("session.jsonl", jsonl([header(0), event(0), row, after])))
    )
    assert errors == []
    return events


def chunk_event(
    seq: int, time_ms: int, chunk: dict[str, Any]
) -> tuple[int, str, datetime | None, dict[str, Any]]:
    return (
        seq,
        "assistant/chunk",
        datetime.fromtimestamp(time_ms / 1000, tz=UTC),
        {"turn": 1, "step": 2, "chunk": chunk},
    )


def shape(events: list[Any]) -> list[tuple[int, str, datetime | None, Any]]:
    return [(e.seq, e.type, e.time, e.data) for e in events]


def test_text_chunk_rows_expand_into_the_text_deltas_the_harness_replays(write: Any) -> None:
    row = {
        "type": "text-chunks",
        "seq0": 1,
        "time0": 1000,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [5, 9], "texts": ["He", "ll", "o"]},
    }
    events = packed_log(write, row)
    assert shape(events[1:4]) == [
        chunk_event(1, 1000, {"type": "text-delta", "index": 0, "text": "He"}),
        chunk_event(2, 1005, {"type": "text-delta", "index": 0, "text": "ll"}),
        chunk_event(3, 1014, {"type": "text-delta", "index": 0, "text": "o"}),
    ]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]


def test_reasoning_chunk_rows_expand_into_reasoning_deltas_with_negative_gaps_kept(write: Any) -> None:
    row = {
        "type": "reasoning-chunks",
        "seq0": 1,
        "time0": 2000,
        "data": {"turn": 1, "step": 2, "index": 3, "dt": [0, -2], "texts": ["a", "b", "c"]},
    }
    events = packed_log(write, row)
    assert shape(events[1:4]) == [
        chunk_event(1, 2000, {"type": "reasoning-delta", "index": 3, "text": "a"}),
        chunk_event(2, 2000, {"type": "reasoning-delta", "index": 3, "text": "b"}),
        chunk_event(3, 1998, {"type": "reasoning-delta", "index": 3, "text": "c"}),
    ]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]


def test_tool_call_chunk_rows_expand_into_tool_call_deltas_with_the_call_identity(write: Any) -> None:
    data = {
        "turn": 1,
        "step": 2,
        "index": 1,
        "dt": [1],
        "id": "call_1",
        "name": "bash",
        "args": ['{"c', 'md":1}'],
    }
    events = packed_log(write, {"type": "tool-call-chunks", "seq0": 1, "time0": 50, "data": data})
    assert shape(events[1:3]) == [
        chunk_event(
            1,
            50,
            {"type": "tool-call-delta", "index": 1, "id": "call_1", "name": "bash", "argumentsDelta": '{"c'},
        ),
        chunk_event(
            2,
            51,
            {
                "type": "tool-call-delta",
                "index": 1,
                "id": "call_1",
                "name": "bash",
                "argumentsDelta": 'md":1}',
            },
        ),
    ]
    assert list(events[1].data["chunk"]) == ["type", "index", "id", "name", "argumentsDelta"]
    assert [e.seq for e in events] == [0, 1, 2, 3]


def test_tool_call_chunk_rows_without_a_name_give_deltas_without_one(write: Any) -> None:
    data = {"turn": 1, "step": 2, "index": 1, "dt": [0, 0], "id": "call_1", "args": ["a", "b", "c"]}
    events = packed_log(write, {"type": "tool-call-chunks", "seq0": 1, "time0": 50, "data": data})
    assert [e.data["chunk"] for e in events[1:4]] == [
        {"type": "tool-call-delta", "index": 1, "id": "call_1", "argumentsDelta": text} for text in "abc"
    ]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b"]}, "data.dt"),
        ({"turn": 1, "step": 1, "index": 0, "dt": [], "texts": []}, "data.texts"),
        ({"turn": 1, "step": 1, "index": 0, "dt": [1], "chunks": ["a", "b"]}, "data"),
        ({"turn": 1, "step": 1, "index": 0, "dt": [1.5], "texts": ["a", "b"]}, "data.dt"),
        ({"turn": "1", "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]}, "data.turn"),
    ],
)
def test_a_packed_row_the_harness_would_refuse_is_a_line_error(
    write: Any, data: dict[str, Any], field: str
) -> None:
    row = {"type": "text-chunks", "seq0": 0, "time0": 10, "data": data}
    events, _, errors = drain(read_dsh_session(write("session.jsonl", jsonl([header(), row]))))
    assert events == []
    assert [(e.line, e.field) for e in errors] == [(2, field)]


def test_compaction_events_in_the_older_compact_spelling_are_known(write: Any) -> None:
    rows = [header(0), event(0, "compact/start"), event(1, "compact/end")]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    events, _, errors = drain(session)
    assert [e.type for e in events] == ["compact/start", "compact/end"]
    assert (session.unfoldable, errors) == ("", [])


def test_every_type_of_the_harness_catalogue_is_known(write: Any) -> None:
    rows = [header(0), event(0, "approval/asked"), event(1, "team/message/queued"), event(2, "session/title")]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    drain(session)
    assert session.unfoldable == ""


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


def test_a_seq_going_back_is_a_line_error_naming_the_line_and_dropped(write: Any) -> None:
    rows = [header(), event(0), event(4), event(2), event(5)]
    events, _, errors = drain(read_dsh_session(write("session.jsonl", jsonl(rows))))
    assert [e.seq for e in events] == [0, 4, 5]
    assert [(e.line, e.field) for e in errors] == [(4, "seq")]
    assert errors[0].reason == "seq 2 goes back after seq 4; seqs must strictly increase; dropped"


def test_seq_gaps_keep_every_event_and_give_one_notice_counting_the_missing_numbers(write: Any) -> None:
    rows = [header(), event(0), event(3), event(4), event(9)]
    session = read_dsh_session(write("session.jsonl", jsonl(rows)))
    items = list(session.items)
    assert [i.seq for i in items if isinstance(i, EventRecord)] == [0, 3, 4, 9]
    assert [i for i in items if isinstance(i, LineError)] == []
    [notice] = [i for i in items if isinstance(i, LineNotice)]
    assert (notice.line, notice.field) == (3, "seq")
    assert notice.reason.startswith("6 seq numbers are missing in 2 gaps (the first: seq 1 to 2)")
    assert session.unfoldable == ""


def test_a_log_starting_after_seq_0_notes_the_numbers_before_it(write: Any) -> None:
    session = read_dsh_session(write("session.jsonl", jsonl([header(), event(1), event(2)])))
    [notice] = [i for i in session.items if isinstance(i, LineNotice)]
    assert notice.reason.startswith("1 seq number is missing in 1 gap (the first: seq 0)")


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
