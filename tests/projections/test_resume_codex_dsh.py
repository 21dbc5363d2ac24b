"""A Codex rollout or a dsh log read in pieces, each read taking up where the one before stopped,
gives what one read of the whole file gives: the same events at the same seqs, the same calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.projections.test_claude_code_resume import read_in_pieces, whole

ROLLOUTS = sorted((Path(__file__).parent / "formats" / "fixtures" / "codex" / "sessions").rglob("*.jsonl"))


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=[path.name for path in ROLLOUTS])
@pytest.mark.parametrize(("lines_a_read", "cut_lines"), [(1, False), (1, True), (3, True)])
def test_a_rollout_read_in_pieces_gives_what_a_whole_read_gives(
    tmp_path: Path, rollout: Path, lines_a_read: int, cut_lines: bool
) -> None:
    target = tmp_path / rollout.name
    pieces = read_in_pieces(
        rollout, target, lines_a_read=lines_a_read, cut_lines=cut_lines, format_name="codex"
    )

    assert pieces == whole(rollout, "codex")
    assert pieces  # the rollout has sessions and calls to compare


DSH_LOGS = sorted((Path(__file__).parent / "formats" / "fixtures" / "dsh").glob("*.jsonl"))


@pytest.mark.parametrize("log", DSH_LOGS, ids=[path.name for path in DSH_LOGS])
@pytest.mark.parametrize(("lines_a_read", "cut_lines"), [(1, False), (1, True), (4, True)])
def test_a_dsh_log_read_in_pieces_gives_what_a_whole_read_gives(
    tmp_path: Path, log: Path, lines_a_read: int, cut_lines: bool
) -> None:
    target = tmp_path / "session.jsonl"
    pieces = read_in_pieces(log, target, lines_a_read=lines_a_read, cut_lines=cut_lines, format_name="dsh")

    assert pieces == whole(log, "dsh")
    assert pieces
