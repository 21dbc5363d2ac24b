from __future__ import annotations

from dataclasses import replace

from dashboard.sessions.breakdown_series import session_breakdown_series, session_breakdown_series_cached
from projections.folds.breakdown import ContextBreakdownV6
from projections.folds.fold import fold
from tests.dashboard.test_folds import bad_claim_log, conversation, store_events, stored_session


def test_the_breakdown_series_follows_the_fold_after_every_change(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    series = session_breakdown_series(session=session)
    v6 = ContextBreakdownV6()
    views = {event.seq: v6.view(fold(v6, log.events[: event.seq + 1])) for event in log.events}
    for point in series.points:
        assert (point.system, point.messages) == (
            views[point.seq].system_tokens,
            views[point.seq].message_tokens,
        )
    assert series.points[-1].seq == log.events[-1].seq
    changes = [seq for seq in views if seq == 0 or views[seq] != views[seq - 1]]
    assert set(changes) <= {point.seq for point in series.points}
    assert [marker.kind for marker in series.markers] == ["prune", "compaction"]
    assert series.markers[1].shadowed_tokens is not None


def test_the_breakdown_series_stops_at_a_fold_error(db: None) -> None:
    session = stored_session(bad_claim_log().events, external_id="broken-two")
    series = session_breakdown_series(session=session)
    assert series.points[-1].seq == 4
    assert "broken-two" in series.error
    assert "claim-range-mismatch" in series.error


def test_the_breakdown_series_is_folded_once_until_the_log_grows(db: None) -> None:
    log = conversation()
    events = list(log.events)
    session = stored_session(events[:-1], event_count=len(events) - 1)
    first = session_breakdown_series_cached(session=session)
    store_events(session, events[-1:])  # stored, but the summary does not count it yet
    assert session_breakdown_series_cached(session=session) == first
    session.event_count = len(events)
    grown = session_breakdown_series_cached(session=session)
    assert grown.events == first.events + 1
    assert grown == session_breakdown_series(session=session)


def test_the_older_compact_spelling_still_marks_the_chart(db: None) -> None:
    older = {"compaction/summary": "compact/summary", "compaction/prune": "compact/prune"}
    log = conversation()
    events = [replace(event, type=older.get(event.type, event.type)) for event in log.events]
    assert any(event.type == "compact/summary" for event in events)
    series = session_breakdown_series(session=stored_session(events, external_id="older-spelling"))
    assert [marker.kind for marker in series.markers] == ["prune", "compaction"]
