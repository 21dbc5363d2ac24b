"""``contextBreakdown`` against the harness's own meter, after every event of logs the harness wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections.events import FoldError
from projections.folds.registry import fold_views, get_projection
from projections.formats.dsh.sessions import read_dsh_session
from projections.normalized import EventRecord, LineError, LineNotice
from tests.conftest import SHARED_DATA
from tests.projections.harness_meter import (
    line_seqs,
    log_lines,
    meter,
    missing_numbers,
    without_chunks,
    without_every_third_off_surface_line,
    write_log,
)

REAL_LOGS = sorted((SHARED_DATA / "dsh-real").glob("*.jsonl"))
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures" / "dsh"

Figures = tuple[int, int, int, int]
ELISIONS = {
    "chunks-elided": without_chunks,
    "every-third-off-surface-line-removed": without_every_third_off_surface_line,
}


def read_events(path: Path) -> tuple[list[EventRecord], str]:
    """The log's events and why it cannot be folded; a line error or notice fails the test."""
    session = read_dsh_session(path)
    items = list(session.items)
    assert not session.fatal
    assert [item for item in items if isinstance(item, LineError | LineNotice)] == []
    return [item for item in items if isinstance(item, EventRecord)], session.unfoldable


def live_breakdown(events: list[EventRecord]) -> list[Figures]:
    """``(seq, systemTokens, toolsTokens, messageTokens)`` of the live version after every event."""
    live = get_projection("contextBreakdown")
    return [
        (step.seq, step.view.system_tokens, step.view.tools_tokens, step.view.message_tokens)
        for step in fold_views(live, events)
    ]


@pytest.mark.shared_data
def test_all_29_real_dsh_logs_are_checked(shared_data: Path) -> None:
    assert len(sorted((shared_data / "dsh-real").glob("*.jsonl"))) == len(REAL_LOGS) == 29


@pytest.mark.shared_data
@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda path: path.name)
def test_a_real_log_shows_what_the_harness_meter_shows_after_every_event(
    path: Path, shared_data: Path
) -> None:
    events, unfoldable = read_events(path)
    assert unfoldable == ""
    assert [event.seq for event in events] == list(range(len(events)))
    assert live_breakdown(events) == list(meter(log_lines(path)))


def test_a_hand_made_header_era_log_shows_what_the_harness_meter_shows_after_every_event() -> None:
    path = FIXTURES / "header-era.session.jsonl"
    events, unfoldable = read_events(path)
    assert unfoldable == ""
    ours = live_breakdown(events)
    assert ours == list(meter(log_lines(path)))
    # The log exercises what it is there for: both envelope figures, and a compaction that shrinks
    # the messages, metered in the older compact/* spelling.
    assert all(system > 0 and tools > 0 for _, system, tools, _ in ours[6:])
    assert len({tools for _, _, tools, _ in ours}) == 3
    checkpoint = next(e.seq for e in events if e.type == "user/message" and e.surface_op != "append")
    assert ours[checkpoint][3] < ours[checkpoint - 1][3]


def test_a_hand_made_log_folds_past_an_ignorable_unknown_type_and_stops_at_another() -> None:
    path = FIXTURES / "unknown-types.session.jsonl"
    events, unfoldable = read_events(path)
    assert unfoldable == "seq 4: unknown event type 'vendor/checkpoint' without ignorable"
    with pytest.raises(FoldError, match=r"seq 4 \(vendor/checkpoint\): unknown-event-type"):
        live_breakdown(events)
    assert live_breakdown(events[:4]) == list(meter(log_lines(path)))[:4]


@pytest.mark.shared_data
def test_the_positional_version_agrees_with_the_live_one_on_every_real_log(shared_data: Path) -> None:
    # The real logs meter every replacement exactly, and name its run by seqs in start/end: version 7
    # must find the same nodes there that version 8's claim prices.
    positional, live = get_projection("contextBreakdown", 7), get_projection("contextBreakdown", 8)
    for path in REAL_LOGS:
        events, _ = read_events(path)
        ours = [step.view for step in fold_views(positional, events)]
        assert ours == [step.view for step in fold_views(live, events)], path.name


def check_gapped_copy(path: Path, folder: Path, elision: str) -> int:
    """Fold a copy of ``path`` with lines removed against the harness meter after every event;
    returns how many seq numbers the copy is missing."""
    whole = log_lines(path)
    copy = write_log(folder / path.name, ELISIONS[elision](whole))
    missing = missing_numbers(whole, log_lines(copy))
    session = read_dsh_session(copy)
    items = list(session.items)
    assert (session.fatal, session.unfoldable) == ("", "")
    assert [item for item in items if isinstance(item, LineError)] == []
    notices = [item for item in items if isinstance(item, LineNotice)]
    if missing:
        [notice] = notices
        assert notice.field == "seq"
        assert notice.reason.startswith(f"{missing} seq number")
    else:
        assert notices == []
    events = [item for item in items if isinstance(item, EventRecord)]
    assert len(events) == sum(len(line_seqs(line)) for line in log_lines(copy)[1:])
    assert live_breakdown(events) == list(meter(log_lines(copy)))
    return missing


@pytest.mark.shared_data
@pytest.mark.parametrize("elision", ELISIONS)
@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda path: path.name)
def test_a_real_log_with_lines_removed_keeps_the_rest_and_shows_what_the_harness_meter_shows(
    path: Path, elision: str, shared_data: Path, tmp_path: Path
) -> None:
    check_gapped_copy(path, tmp_path, elision)


@pytest.mark.parametrize("elision", ELISIONS)
def test_a_hand_made_log_with_lines_removed_keeps_the_rest_and_shows_what_the_harness_meter_shows(
    elision: str, tmp_path: Path
) -> None:
    assert check_gapped_copy(FIXTURES / "header-era.session.jsonl", tmp_path, elision) > 0
