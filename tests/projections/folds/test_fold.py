from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from projections.events import HARNESS_EVENT_TYPES, METERING_TYPES, SURFACE_TYPES, FoldError
from projections.folds.breakdown import Breakdown, ContextBreakdownV5, ContextBreakdownV6
from projections.folds.fold import ProjectionRow, fold, fold_views, resume, state_size_bytes, to_row
from projections.folds.registry import live_projections
from projections.folds.token_usage import TokenUsageV1
from projections.normalized import EventRecord
from projections.synthetic import LogBuilder

V5 = ContextBreakdownV5()
V6 = ContextBreakdownV6()


def small_log() -> LogBuilder:
    log = LogBuilder()
    log.system("prompt")
    log.user("question")
    log.assistant("answer")
    return log


def test_fold_views_yields_the_view_after_every_event() -> None:
    log = small_log()
    views = [(step.seq, step.view) for step in fold_views(V6, log.events)]
    prompt = V6.view(fold(V6, log.events[:1])).system_tokens
    assert [seq for seq, _ in views] == [0, 1, 2]
    assert views[0][1] == Breakdown(prompt, 0)
    assert views[-1][1] == V6.view(fold(V6, log.events))


def test_an_unknown_ignorable_event_is_skipped() -> None:
    log = small_log()
    log.event("plugin/thing", {"x": 1}, surface_op="append", ignorable=True)
    state = fold(V6, log.events[:3])
    assert fold(V6, log.events[3:], state=state, after_seq=2) is state


def test_an_unknown_event_that_is_not_ignorable_stops_the_fold() -> None:
    log = small_log()
    log.event("plugin/thing", {"x": 1})
    with pytest.raises(FoldError) as caught:
        fold(V6, log.events)
    assert (caught.value.seq, caught.value.event_type, caught.value.rule) == (
        3,
        "plugin/thing",
        "unknown-event-type",
    )


@pytest.mark.parametrize("projection", live_projections(), ids=lambda p: p.key)
def test_every_type_of_the_harness_catalogue_off_the_surface_folds_as_a_no_op(projection: Any) -> None:
    log = small_log()
    before = fold(projection, log.events)
    no_ops = sorted(
        HARNESS_EVENT_TYPES - SURFACE_TYPES - METERING_TYPES - {"request/header", "request/context"}
    )
    for kind in no_ops:
        log.event(kind, {"turn": 1, "step": 1})
    assert len(no_ops) >= 40
    assert projection.view(fold(projection, log.events)) == projection.view(before)


def test_cachescope_types_are_known_in_any_log() -> None:
    log = small_log()
    log.event("cache/log", {"line": "[kv-unified] hit"})
    assert V6.view(fold(V6, log.events)) == V6.view(fold(V6, log.events[:3]))


def test_the_older_compact_spelling_meters_a_replacement_like_compaction() -> None:
    def compacted(spelling: str) -> list[EventRecord]:
        log = small_log()
        log.compact(1, 2, "summary", tokens=7)
        return [replace(e, type=e.type.replace("compaction/", spelling)) for e in log.events]

    for projection in (V5, V6):
        older = [step.view for step in fold_views(projection, compacted("compact/"))]
        assert older == [step.view for step in fold_views(projection, compacted("compaction/"))]
    assert fold(V6, compacted("compact/")).total == fold(V6, compacted("compaction/")).total


def test_an_unpriceable_message_stops_the_fold_naming_seq_and_field() -> None:
    log = small_log()
    log.event("user/message", {"role": "user"}, surface_op="append")
    with pytest.raises(
        FoldError, match=r"seq 3 \(user/message\): unpriceable-message: .*'content' is missing"
    ):
        fold(V6, log.events)


def test_a_gap_in_seqs_folds_on_over_the_events_present() -> None:
    events = small_log().events
    gapped, whole = V6.view(fold(V6, [events[0], events[2]])), V6.view(fold(V6, events))
    question = V6.view(fold(V6, [events[1]])).message_tokens
    assert question > 0
    assert gapped == Breakdown(whole.system_tokens, whole.message_tokens - question)


def test_a_repeated_or_earlier_seq_stops_the_fold() -> None:
    events = small_log().events
    with pytest.raises(FoldError, match=r"seq 1 \(.*\): seq-order: seq 1 after seq 2: seqs must strictly"):
        fold(V6, [events[0], events[2], events[1]])
    with pytest.raises(FoldError, match="seq-order: seq 2 after seq 2"):
        fold(V6, [events[0], events[2], events[2]])


def test_after_seq_skips_events_already_in_the_state() -> None:
    log = small_log()
    state = fold(V6, log.events[:2])
    assert V6.view(fold(V6, log.events, state=state, after_seq=1)) == V6.view(fold(V6, log.events))


def test_resume_from_a_row_costs_one_apply_per_new_event() -> None:
    log = small_log()
    row = to_row(V6, fold(V6, log.events), seq=2)
    log.user("follow-up")
    calls: list[int] = []

    class Counting(ContextBreakdownV6):
        def apply(self, state, event):  # type: ignore[no-untyped-def]
            calls.append(event.seq)
            return super().apply(state, event)

    state, last = resume(Counting(), row, log.events)
    assert calls == [3]
    assert last == 3
    assert V6.view(state) == V6.view(fold(V6, log.events))


def test_resume_ignores_a_row_of_another_state_version() -> None:
    log = small_log()
    stale = ProjectionRow("contextBreakdown", 5, 2, {"garbage": True})
    state, last = resume(V6, stale, log.events)
    assert last == 2
    assert V6.view(state) == V6.view(fold(V6, log.events))


def test_resume_ignores_a_row_of_another_key() -> None:
    log = small_log()
    other = to_row(TokenUsageV1(), TokenUsageV1().init(), seq=2)
    _, last = resume(V6, ProjectionRow("tokenUsage", 6, other.seq, other.val), log.events)
    assert last == 2


def test_resume_without_new_events_keeps_the_row_seq() -> None:
    log = small_log()
    row = to_row(V6, fold(V6, log.events), seq=2)
    assert resume(V6, row, log.events)[1] == 2


def test_a_row_value_is_plain_json() -> None:
    log = small_log()
    log.meter("compaction/summary", 1, 2)
    rows = [to_row(V5, fold(V5, log.events), seq=3), to_row(V6, fold(V6, log.events), seq=3)]
    for row in rows:
        assert json.loads(json.dumps(row.val)) == row.val


def test_state_size_is_the_length_of_the_compact_json() -> None:
    state = V6.init()
    assert state_size_bytes(V6, state) == len('{"total":0,"systems":[],"claim":null}')
