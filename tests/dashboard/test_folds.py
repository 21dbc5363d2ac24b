from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import dashboard.worker.tasks  # noqa: F401  (registers the fold as an ingest follow-up)
from dashboard.ingest.files import ingest_paths
from dashboard.models import Event, ProjcacheCheck, ProjectionRow, Session, Source, Warning
from dashboard.refold import folds
from dashboard.refold.folds import (
    fold_session,
    session_records,
)
from dashboard.refold.projcache import agrees, projcache_ingest
from projections.folds.breakdown import ContextBreakdownV5, ContextBreakdownV6, ContextBreakdownV8
from projections.folds.fold import fold, to_row
from projections.folds.registry import get_projection, live_projections, live_versions, state_size_bytes
from projections.normalized import EventRecord
from projections.synthetic import LogBuilder

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def stored_session(events: list[EventRecord], external_id: str = "s1", **fields: Any) -> Session:
    """A session whose stored log is ``events``."""
    source, _ = Source.objects.get_or_create(name="laptop")
    session = Session.objects.create(source=source, external_id=external_id, format="dsh", **fields)
    store_events(session, events)
    return session


def store_events(session: Session, events: list[EventRecord]) -> None:
    Event.objects.bulk_create(
        Event(
            session=session,
            seq=event.seq,
            type=event.type,
            time=event.time or T0.replace(second=event.seq % 60),
            data=dict(event.data),
            surface_op=event.surface_op,
            source_event_seqs=list(event.source_event_seqs) if event.source_event_seqs is not None else None,
            ignorable=event.ignorable,
        )
        for event in events
    )


def conversation(turns: int = 3) -> LogBuilder:
    """A system prompt, then user and assistant turns with usage, a prune and a compaction."""
    log = LogBuilder()
    log.header(model="claude")
    log.system("You are a careful engineer.")
    for turn in range(turns):
        log.user(f"question {turn} " * 5)
        log.tool_result(f"output {turn} " * 20)
        log.assistant(f"answer {turn}", usage={"inputTokens": 10, "cacheReadTokens": 100 * turn}, turn=turn)
    log.prune(2, "[pruned]")
    log.compact(1, 3, "summary of the start")
    log.user("and now?")
    return log


def bad_claim_log() -> LogBuilder:
    """A log whose replacement names another range than its metering event claimed (at seq 5)."""
    log = LogBuilder()
    log.system("system prompt")
    log.user("one")
    log.user("two")
    log.user("three")
    log.meter("compaction/prune", 1, 1)
    log.replace("user/message", "x", 2, 2)
    log.user("after")
    return log


@pytest.fixture
def count_applies(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], list[int]]:
    """Record the seq of every event applied to the live projection of a key."""

    def watch(key: str) -> list[int]:
        seqs: list[int] = []
        projection = get_projection(key)
        original = type(projection).apply

        def apply(self: Any, state: Any, event: EventRecord) -> Any:
            seqs.append(event.seq)
            return original(self, state, event)

        monkeypatch.setattr(type(projection), "apply", apply)
        return seqs

    return watch


def test_stored_events_come_back_as_engine_records_with_every_field(db: None) -> None:
    session = stored_session([])
    row = Event.objects.create(
        session=session,
        seq=4,
        type="tool/result",
        time=T0,
        data={"turn": 1},
        surface_op={"op": "replace", "start": 1, "end": 2},
        source_event_seqs=[1, 2],
        ignorable=True,
    )
    assert row.pk
    assert list(session_records(session_id=session.pk)) == [
        EventRecord(
            seq=4,
            type="tool/result",
            time=T0,
            data={"turn": 1},
            surface_op={"op": "replace", "start": 1, "end": 2},
            source_event_seqs=(1, 2),
            ignorable=True,
        )
    ]


def test_a_log_longer_than_a_page_comes_back_whole_in_seq_order(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = conversation(turns=4)
    session = stored_session(log.events)
    whole = list(session_records(session_id=session.pk))
    monkeypatch.setattr(folds, "EVENT_CHUNK", 3)

    assert list(session_records(session_id=session.pk)) == whole
    assert [e.seq for e in whole] == sorted(e.seq for e in log.events)
    later = [e for e in whole if e.seq > whole[4].seq]
    assert list(session_records(session_id=session.pk, after_seq=whole[4].seq)) == later


def test_a_fold_read_in_pages_writes_the_rows_of_one_read_whole(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = conversation()
    whole, paged = stored_session(log.events, "whole"), stored_session(log.events, "paged")
    fold_session(session_id=whole.pk)
    monkeypatch.setattr(folds, "EVENT_CHUNK", 2)
    fold_session(session_id=paged.pk)

    def rows(session: Session) -> dict[str, tuple[Any, ...]]:
        return {
            r.key: (r.ver, r.seq, r.val, r.view, r.error)
            for r in ProjectionRow.objects.filter(session=session)
        }

    assert rows(paged) == rows(whole)
    assert len(rows(whole)) == len(live_projections())


def test_fold_session_writes_one_row_per_live_key_at_the_last_seq(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    result = fold_session(session_id=session.pk)
    rows = {row.key: row for row in ProjectionRow.objects.filter(session=session)}
    assert {key: row.ver for key, row in rows.items()} == dict(live_versions())
    last = log.events[-1].seq
    assert all(row.seq == last and not row.error for row in rows.values())
    assert result.events_folded == len(log.events) * len(live_projections())


def test_a_row_holds_the_state_view_and_size_of_a_fold_from_scratch(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    fold_session(session_id=session.pk)
    row = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    live = ContextBreakdownV8()
    state = fold(live, log.events)
    assert row.val == to_row(live, state, log.events[-1].seq).val
    assert row.view == live.view(state).to_json()
    assert row.state_bytes == state_size_bytes(live, state) > 0


def test_a_new_event_costs_one_apply(db: None, count_applies: Callable[[str], list[int]]) -> None:
    log = conversation()
    session = stored_session(log.events)
    fold_session(session_id=session.pk)
    applied = count_applies("contextBreakdown")
    store_events(session, [log.user("one more")])
    fold_session(session_id=session.pk)
    assert applied == [log.events[-1].seq]
    row = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    assert row.seq == log.events[-1].seq
    assert row.view == ContextBreakdownV8().view(fold(ContextBreakdownV8(), log.events)).to_json()


def test_folding_an_unchanged_log_applies_nothing(
    db: None, count_applies: Callable[[str], list[int]]
) -> None:
    session = stored_session(conversation().events)
    fold_session(session_id=session.pk)
    applied = count_applies("tokenUsage")
    fold_session(session_id=session.pk)
    assert applied == []


def test_a_row_of_another_version_is_discarded_and_the_key_folded_again(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    v5 = ContextBreakdownV5()
    stale = to_row(v5, fold(v5, log.events[:5]), 4)
    ProjectionRow.objects.create(session=session, key=stale.key, ver=stale.ver, seq=stale.seq, val=stale.val)
    result = fold_session(session_id=session.pk)
    versions = list(
        ProjectionRow.objects.filter(session=session, key="contextBreakdown").values_list("ver", "seq")
    )
    assert versions == [(8, log.events[-1].seq)]
    assert next(key for key in result.keys if key.key == "contextBreakdown").discarded == 1


def test_bumping_a_version_discards_only_that_keys_rows(
    db: None, count_applies: Callable[[str], list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    session = stored_session(conversation().events)
    fold_session(session_id=session.pk)
    before = {row.key: (row.pk, row.ver, row.val) for row in ProjectionRow.objects.filter(session=session)}
    applied = count_applies("tokenUsage")
    live = {**live_versions(), "contextBreakdown": 5}
    monkeypatch.setattr(folds, "live_versions", lambda: live)
    monkeypatch.setattr(
        folds, "live_projections", lambda: tuple(get_projection(key, ver) for key, ver in live.items())
    )
    fold_session(session_id=session.pk)
    after = {row.key: (row.pk, row.ver, row.val) for row in ProjectionRow.objects.filter(session=session)}
    assert after["contextBreakdown"][1] == 5
    assert after["contextBreakdown"][0] != before["contextBreakdown"][0]
    assert {key: value for key, value in after.items() if key != "contextBreakdown"} == {
        key: value for key, value in before.items() if key != "contextBreakdown"
    }
    assert applied == []


def test_a_fold_error_leaves_the_row_at_the_last_good_seq_and_warns(db: None) -> None:
    log = bad_claim_log()
    session = stored_session(log.events, external_id="broken-one")
    fold_session(session_id=session.pk)
    row = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    assert row.seq == 4
    assert row.val == to_row(ContextBreakdownV8(), fold(ContextBreakdownV8(), log.events[:5]), 4).val
    assert "claim-range-mismatch" in row.error
    warning = Warning.objects.get(session=session, kind="fold-error", place="contextBreakdown v8 seq 5")
    for part in ("broken-one", "seq 5", "user/message", "claim-range-mismatch"):
        assert part in warning.message
    session.refresh_from_db()
    assert session.warning_count == Warning.objects.filter(session=session).count() >= 1


def test_a_repeated_fold_error_counts_on_one_warning(db: None) -> None:
    session = stored_session(bad_claim_log().events)
    fold_session(session_id=session.pk)
    fold_session(session_id=session.pk)
    warning = Warning.objects.get(session=session, kind="fold-error", place="contextBreakdown v8 seq 5")
    assert warning.count == 2
    assert ProjectionRow.objects.get(session=session, key="contextBreakdown").seq == 4


def test_a_fold_error_stops_only_its_own_key(db: None) -> None:
    log = bad_claim_log()
    session = stored_session(log.events)
    fold_session(session_id=session.pk)
    usage = ProjectionRow.objects.get(session=session, key="tokenUsage")
    assert (usage.seq, usage.error) == (log.events[-1].seq, "")


def test_an_unfoldable_session_is_not_folded(db: None) -> None:
    session = stored_session(conversation().events, unfoldable="seq 3: unknown event type 'x/y'")
    result = fold_session(session_id=session.pk)
    assert "unknown event type" in result.skipped
    assert not ProjectionRow.objects.filter(session=session).exists()


def test_ingest_folds_the_session_once_it_commits(
    db: None, dsh_log: Path, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        summary = ingest_paths(paths=[dsh_log], source_name="laptop")
    rows = ProjectionRow.objects.filter(session_id=summary.session_ids[0])
    assert {row.key for row in rows} == set(live_versions())
    assert {row.seq for row in rows} == {4}


# --- host projection caches (session_projcache.json) -------------------------------------------------


def write_projcache(path: Path, session_id: str, rows: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"identity": {"sessionId": session_id}, "rows": rows}))
    return path


def test_a_host_row_that_matches_our_fold_is_recorded_as_agreement(db: None, tmp_path: Path) -> None:
    log = conversation()
    session = stored_session(log.events, external_id="cached")
    v5 = ContextBreakdownV5()
    seq = 8
    view = v5.view(fold(v5, log.events[: seq + 1])).to_json()
    path = write_projcache(
        tmp_path / "cached" / "session_projcache.json",
        "cached",
        {"contextBreakdown": {"ver": 5, "seq": seq, "val": view}, "other": {"ver": 1, "seq": 1, "val": {}}},
    )
    result = projcache_ingest(path, source_name="laptop")
    assert (result.session_id, result.agree, result.skipped) == (
        session.pk,
        ["contextBreakdown v5 seq 8"],
        ["other v1 seq 1"],
    )
    check = ProjcacheCheck.objects.get(session=session)
    assert (check.status, check.ours) == ("agree", view)
    assert not Warning.objects.exists()


def test_a_host_row_that_differs_raises_a_projection_mismatch(db: None, tmp_path: Path) -> None:
    log = conversation()
    session = stored_session(log.events, external_id="cached")
    last = log.events[-1].seq
    path = write_projcache(
        tmp_path / "session_projcache.json",
        "cached",
        {"contextBreakdown": {"ver": 6, "seq": last, "val": {"systemTokens": 1, "messageTokens": 2}}},
    )
    result = projcache_ingest(path, source_name="laptop")
    assert result.mismatch == [f"contextBreakdown v6 seq {last}"]
    warning = Warning.objects.get(session=session, kind="projection-mismatch")
    assert "cached" in warning.message
    assert "systemTokens" in warning.message
    session.refresh_from_db()
    assert session.warning_count == 1


def test_a_host_row_beyond_the_stored_log_is_not_comparable(db: None, tmp_path: Path) -> None:
    stored_session(conversation().events, external_id="cached")
    path = write_projcache(
        tmp_path / "session_projcache.json", "cached", {"tokenUsage": {"ver": 1, "seq": 999, "val": {}}}
    )
    result = projcache_ingest(path, source_name="laptop")
    assert result.not_comparable == ["tokenUsage v1 seq 999"]
    assert "ends at seq" in ProjcacheCheck.objects.get().detail


def test_a_projection_cache_of_an_unknown_session_says_so(db: None, tmp_path: Path) -> None:
    path = write_projcache(tmp_path / "session_projcache.json", "nobody", {})
    result = projcache_ingest(path, source_name="laptop")
    assert result.session_id is None
    assert "no stored session 'nobody'" in result.error


def test_the_session_page_shows_the_host_cache_check(db: None, tmp_path: Path, viewer_client: Any) -> None:
    log = conversation()
    session = stored_session(log.events, external_id="cached")
    v6 = ContextBreakdownV6()
    view = v6.view(fold(v6, log.events)).to_json()
    last = log.events[-1].seq
    path = write_projcache(
        tmp_path / "session_projcache.json",
        "cached",
        {"contextBreakdown": {"ver": 6, "seq": last, "val": view}},
    )
    projcache_ingest(path, source_name="laptop")
    text = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "the host's row matches our fold" in text


def test_a_host_row_keeping_fewer_figures_agrees_when_those_it_keeps_are_equal() -> None:
    ours = {"inputTokens": 5, "cacheReadTokens": 10, "outputTokens": 3, "reports": 2}
    assert agrees({"inputTokens": 5, "cacheReadTokens": 10, "outputTokens": 3}, ours)
    assert not agrees({"inputTokens": 6, "cacheReadTokens": 10}, ours)
    assert not agrees({"inputTokens": 5, "cacheMissTokens": 1}, ours)
    assert agrees(7, 7)
