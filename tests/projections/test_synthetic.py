from __future__ import annotations

from projections.prices import event_price
from projections.synthetic import LogBuilder


def test_events_get_contiguous_seqs() -> None:
    log = LogBuilder()
    log.user("a")
    log.event("turn/start", {"turn": 1})
    log.compact(0, 0, "summary")
    assert [event.seq for event in log.events] == list(range(len(log.events)))


def test_a_meter_states_the_exact_price_of_its_range_by_default() -> None:
    log = LogBuilder()
    first, second = log.user("a"), log.assistant("bb")
    meter = log.meter("compaction/summary", 0, 1)
    assert meter.data["shadowedTokenCount"] == event_price(first) + event_price(second)
    assert meter.data["shadowedSeqs"] == [0, 1]


def test_a_seq_spelled_compaction_names_seqs_in_the_range_and_the_op() -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.replace("user/message", "c", 0, 0)
    log.compact(0, 1, "summary", by_seq=True)
    meter, checkpoint = log.events[4], log.events[5]
    assert meter.data["shadowedRange"] == {"start": 2, "end": 1}
    assert checkpoint.surface_op == {"op": "replace", "startSeq": 2, "endSeq": 1}
    assert [node.seq for node in log.nodes] == [5]
