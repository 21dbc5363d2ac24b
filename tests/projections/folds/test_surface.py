from __future__ import annotations

import pytest

from projections.events import FoldError
from projections.folds.surface import Surface, apply_surface, fold_surface
from projections.normalized import EventRecord
from projections.synthetic import LogBuilder


def test_appends_add_nodes_in_order() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a")
    log.event("turn/start", {"turn": 1})
    log.assistant("b")
    assert fold_surface(log.events).seqs() == (0, 1, 3)


def test_replace_by_positions_swaps_the_run_for_the_new_node() -> None:
    log = LogBuilder()
    for text in "abcd":
        log.user(text)
    log.replace("user/message", "summary", 1, 2)
    assert fold_surface(log.events).seqs() == (0, 4, 3)


def test_replace_by_seqs_swaps_the_run_for_the_new_node() -> None:
    log = LogBuilder()
    for text in "abcd":
        log.user(text)
    log.replace("user/message", "summary", 1, 2)
    log.replace("user/message", "again", 1, 2, by_seq=True)
    assert log.events[-1].surface_op == {"op": "replace", "startSeq": 4, "endSeq": 3}
    assert fold_surface(log.events).seqs() == (0, 5)


def harness_replace(log: LogBuilder, start_seq: int, end_seq: int, sources: tuple[int, ...]) -> None:
    """A replacement as the harness writes it: seqs in ``start``/``end``, every shadowed node a source."""
    op = {"op": "replace", "start": start_seq, "end": end_seq}
    log.event(
        "user/message", {"role": "user", "content": "summary"}, surface_op=op, source_event_seqs=sources
    )


def test_a_start_end_replacement_naming_seqs_as_the_harness_writes_it_is_read_by_seq() -> None:
    log = LogBuilder()
    log.event("turn/start", {"turn": 1})
    log.event("turn/start", {"turn": 2})
    for text in "abc":
        log.user(text)  # nodes at seqs 2, 3, 4
    harness_replace(log, 3, 4, sources=(3, 4))
    # As positions, 3..4 would name nodes that are not there; as seqs, the last two nodes.
    assert fold_surface(log.events).seqs() == (2, 5)


def test_a_start_end_replacement_whose_positions_hold_its_sources_stays_positional() -> None:
    log = LogBuilder()
    log.event("turn/start", {"turn": 1})
    for text in "abcd":
        log.user(text)  # nodes at seqs 1, 2, 3, 4
    harness_replace(log, 1, 2, sources=(2, 3))
    assert fold_surface(log.events).seqs() == (1, 5, 4)


def test_a_start_end_replacement_its_sources_do_not_explain_is_read_by_position() -> None:
    log = LogBuilder()
    log.event("turn/start", {"turn": 1})
    for text in "abcd":
        log.user(text)  # nodes at seqs 1, 2, 3, 4
    harness_replace(log, 3, 4, sources=(9,))
    with pytest.raises(FoldError, match=r"replaces positions 3\.\.4 of a surface of 4 nodes"):
        fold_surface(log.events)


def test_replacement_remembers_its_source_event_seqs() -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.replace("user/message", "summary", 0, 1)
    assert fold_surface(log.events).shadowed_by == {2: (0, 1)}


def test_replacement_without_source_event_seqs_remembers_the_replaced_run() -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.replace("user/message", "summary", 0, 1, list_sources=False)
    assert fold_surface(log.events).shadowed_by == {2: (0, 1)}


def test_applying_an_event_leaves_the_earlier_surface_unchanged() -> None:
    log = LogBuilder()
    log.user("a")
    first = fold_surface(log.events)
    log.user("b")
    log.replace("user/message", "c", 0, 0)
    later = fold_surface(log.events[1:], first)
    assert first.seqs() == (0,)
    assert later.seqs() == (2, 1)
    assert first.shadowed_by == {}


def test_event_off_the_surface_returns_the_same_surface() -> None:
    surface = Surface()
    event = EventRecord(seq=0, type="turn/start", time=None, data={})
    assert apply_surface(surface, event) is surface


@pytest.mark.parametrize(("start", "end"), [(0, 2), (-1, 0), (1, 0)])
def test_replace_positions_out_of_range_are_an_error(start: int, end: int) -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.event("user/message", {"role": "user", "content": "x"}, {"op": "replace", "start": start, "end": end})
    with pytest.raises(FoldError) as caught:
        fold_surface(log.events)
    assert (caught.value.seq, caught.value.rule) == (2, "replace-out-of-range")


def test_replace_of_a_seq_not_on_the_surface_is_an_error() -> None:
    log = LogBuilder()
    log.user("a")
    log.event("turn/start", {"turn": 1})
    log.event("user/message", {"role": "user", "content": "x"}, {"op": "replace", "startSeq": 1, "endSeq": 1})
    with pytest.raises(FoldError, match="startSeq 1 is not a current surface node"):
        fold_surface(log.events)


def test_replace_with_seqs_in_reverse_surface_order_is_an_error() -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.event("user/message", {"role": "user", "content": "x"}, {"op": "replace", "startSeq": 1, "endSeq": 0})
    with pytest.raises(FoldError, match="comes after endSeq"):
        fold_surface(log.events)
