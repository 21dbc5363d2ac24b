"""A time before 2000 or more than a day ahead of the ingest is kept as unknown, with one notice
per kind naming its first line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from projections.formats.dsh.sessions import read_dsh_session
from projections.formats.reading.times import plausible_times
from projections.normalized import EventRecord, LineNotice, RequestRecord, SessionImport
from tests.projections.formats.conftest import event, header, jsonl

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
MS_9999 = int(datetime(9999, 12, 29, tzinfo=UTC).timestamp() * 1000)
MS_0001 = int(datetime(1, 1, 3, tzinfo=UTC).timestamp() * 1000)


def read(write: Any, events: list[dict[str, Any]], **head: Any) -> tuple[SessionImport, list[Any]]:
    imported = plausible_times(read_dsh_session(write("s.jsonl", jsonl([header(**head), *events]))), now=NOW)
    return imported, list(imported.items)


def test_an_event_dated_9999_is_kept_with_its_time_unknown_and_a_notice_naming_its_line(write: Any) -> None:
    imported, items = read(write, [event(0), event(1, time=MS_9999), event(2)])

    events = [item for item in items if isinstance(item, EventRecord)]
    assert [e.seq for e in events] == [0, 1, 2]
    assert events[1].time is None
    assert events[0].time is not None
    assert events[2].time is not None
    [notice] = [item for item in items if isinstance(item, LineNotice)]
    assert (notice.line, notice.field) == (3, "time")
    assert "9999-12-29" in notice.reason
    assert "more than a day after 2026-03-04" in notice.reason
    assert imported.ended_at is not None
    assert imported.ended_at < NOW


def test_times_near_the_epoch_and_at_year_one_are_before_2000_and_noticed_once(write: Any) -> None:
    _, items = read(write, [event(0, time=5), event(1, time=MS_0001), event(2, time=7), event(3)])

    events = [item for item in items if isinstance(item, EventRecord)]
    assert [e.time is None for e in events] == [True, True, True, False]
    [notice] = [item for item in items if isinstance(item, LineNotice)]
    assert notice.line == 2
    assert "before 2000" in notice.reason
    assert "(3 lines)" in notice.reason


def test_a_host_clock_hours_fast_is_still_a_wall_clock(write: Any) -> None:
    ahead = int((NOW + timedelta(hours=20)).timestamp() * 1000)
    _, items = read(write, [event(0, time=ahead)])

    assert [item.time for item in items if isinstance(item, EventRecord)] == [NOW + timedelta(hours=20)]
    assert not [item for item in items if isinstance(item, LineNotice)]


def test_a_header_dated_far_ahead_leaves_the_session_start_unknown(write: Any) -> None:
    imported, items = read(write, [event(0)], createdAt="9999-12-29T00:00:00Z")

    assert imported.started_at is None
    [notice] = [item for item in items if isinstance(item, LineNotice)]
    assert notice.field == "time"


def test_a_request_dated_in_the_future_keeps_its_usage_with_its_times_unknown() -> None:
    far = datetime(9999, 12, 29, tzinfo=UTC)
    record = RequestRecord(
        key="r1", ordinal=0, lineage="main", provider="anthropic", platform="anthropic", api="messages",
        model="claude-sonnet-4", started_at=far, first_token_at=far, line=7,
    )  # fmt: skip
    imported = plausible_times(SessionImport("s", "capture", "c.jsonl", iter([record])), now=NOW)

    stored, notice = list(imported.items)
    assert isinstance(stored, RequestRecord)
    assert isinstance(notice, LineNotice)
    assert (stored.key, stored.started_at, stored.first_token_at) == ("r1", None, None)
    assert notice.line == 7
    assert "(2 lines)" not in notice.reason
