"""A Claude Code transcript read in pieces, each read taking up where the one before stopped, gives
what one read of the whole file gives: the same events at the same seqs, the same calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from projections.formats import CannotResume, read_log_file
from projections.formats.reading.resume import ReadEnd, ResumePoint
from projections.normalized import EventRecord, RequestRecord
from tests.dashboard.transcript_lines import conversation

Seen = dict[str, dict[str, dict[object, object]]]


def collect(
    path: Path, point: ResumePoint | None, seen: Seen, format_name: str = "claude-code"
) -> ResumePoint | None:
    """Read ``path`` from ``point`` (whole when it cannot resume), keeping what a store keeps: the
    first event at each seq, and each call with the largest output count it was given."""
    end = ReadEnd()
    try:
        sessions = list(read_log_file(path, format_name, resume=point, end=end))
    except CannotResume:
        end = ReadEnd()
        sessions = list(read_log_file(path, format_name, end=end))
    for session in sessions:
        kept = seen.setdefault(session.external_id, {"events": {}, "calls": {}})
        for item in session.items:
            if isinstance(item, EventRecord):
                kept["events"].setdefault(item.seq, item.type)
            elif isinstance(item, RequestRecord) and item.usage is not None:
                output = max(item.usage.output or 0, int(kept["calls"].get(item.key, 0)))  # type: ignore[call-overload]
                kept["calls"][item.key] = output
    return end.point


def read_in_pieces(
    source: Path, target: Path, *, lines_a_read: int, cut_lines: bool, format_name: str = "claude-code"
) -> Seen:
    seen: Seen = {}
    point = None
    lines = source.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"")
    for start in range(0, len(lines), lines_a_read):
        piece = b"".join(lines[start : start + lines_a_read])
        cut = len(piece) // 2 if cut_lines else len(piece)
        for part in (piece[:cut], piece[cut:]):
            with target.open("ab") as fh:
                fh.write(part)
            if b"\n" in target.read_bytes():  # a file whose first line is still written waits for it
                point = collect(target, point, seen, format_name)
    return seen


def whole(path: Path, format_name: str = "claude-code") -> Seen:
    seen: Seen = {}
    collect(path, None, seen, format_name)
    return seen


@pytest.mark.parametrize("lines_a_read", [1, 2, 5])
@pytest.mark.parametrize("cut_lines", [False, True])
def test_a_transcript_read_in_pieces_gives_what_a_whole_read_gives(
    tmp_path: Path, lines_a_read: int, cut_lines: bool
) -> None:
    source = tmp_path / "source.jsonl"
    source.write_bytes(b"".join(conversation(6)))
    target = tmp_path / "5f1d0c6e-8a45-4c4e-9a43-2b7f0d7a9c11.jsonl"

    assert read_in_pieces(source, target, lines_a_read=lines_a_read, cut_lines=cut_lines) == whole(source)


def test_a_read_stops_before_an_unterminated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = conversation(1)
    path.write_bytes(b"".join(lines)[:-1])  # the last line's newline not written yet
    end = ReadEnd()
    for session in read_log_file(path, "claude-code", end=end):
        list(session.items)

    assert end.point is not None
    assert end.point.offset == len(b"".join(lines[:-1]))
    assert end.point.line == len(lines) - 1


def test_a_point_of_another_state_version_is_not_resumed_from(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(conversation(1)))

    with pytest.raises(CannotResume, match="another version"):
        list(read_log_file(path, "claude-code", resume=ResumePoint(0, 0, {"version": -1})))


@pytest.mark.shared_data
@pytest.mark.parametrize("lines_a_read", [1, 40])
def test_the_real_transcripts_read_in_pieces_give_what_a_whole_read_gives(
    tmp_path: Path, lines_a_read: int, shared_data: Path
) -> None:
    for root, _dirs, files in os.walk(shared_data / "claude-code"):
        for name in files:
            source = Path(root) / name
            target = tmp_path / name
            assert read_in_pieces(source, target, lines_a_read=lines_a_read, cut_lines=True) == whole(
                source
            ), name
