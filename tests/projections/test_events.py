from __future__ import annotations

import pytest

from projections.events import (
    APPEND,
    Claim,
    FoldError,
    Replace,
    check_claim,
    claim_matches,
    claim_of,
    replaced_seqs,
    report_key,
    surface_op,
    usage_of,
)
from projections.normalized import JSON, EventRecord


def event(kind: str, data: dict[str, JSON] | None = None, op: JSON = None, seq: int = 3) -> EventRecord:
    return EventRecord(seq=seq, type=kind, time=None, data=data or {}, surface_op=op)


def test_surface_op_reads_append() -> None:
    assert surface_op(event("user/message", op="append")) == APPEND


def test_surface_op_reads_both_spellings_of_replace() -> None:
    assert surface_op(event("tool/result", op={"op": "replace", "start": 1, "end": 2})) == Replace(
        1, 2, False
    )
    by_seq = {"op": "replace", "startSeq": 5, "endSeq": 9}
    assert surface_op(event("tool/result", op=by_seq)) == Replace(5, 9, True)


def test_surface_op_is_none_off_the_surface() -> None:
    assert surface_op(event("turn/start")) is None


def test_surface_op_on_a_non_surface_type_is_an_error() -> None:
    with pytest.raises(FoldError, match="surface-op-on-non-surface-event"):
        surface_op(event("compaction/prune", op="append"))


def test_surface_op_of_another_shape_is_an_error() -> None:
    with pytest.raises(FoldError, match="bad-surface-op"):
        surface_op(event("user/message", op={"op": "insert"}))


def test_replace_with_a_non_integer_bound_names_the_field() -> None:
    with pytest.raises(FoldError, match=r"surfaceOp.end must be an integer"):
        surface_op(event("user/message", op={"op": "replace", "start": 1, "end": "2"}))


def test_fold_error_names_seq_type_and_rule_and_takes_the_session() -> None:
    error = FoldError(7, "user/message", "claim-range-mismatch", "details")
    assert str(error) == "seq 7 (user/message): claim-range-mismatch: details"
    assert (
        str(error.with_session("s-1")) == "session s-1, seq 7 (user/message): claim-range-mismatch: details"
    )
    assert error.with_session("s-1").rule == "claim-range-mismatch"


def test_claim_of_reads_range_seqs_and_tokens() -> None:
    data: dict[str, JSON] = {
        "shadowedRange": {"start": 1, "end": 2},
        "shadowedSeqs": [4, 6],
        "shadowedTokenCount": 90,
    }
    assert claim_of(event("compaction/prune", data)) == Claim(1, 2, 90, (4, 6))


def test_claim_without_a_token_count_is_an_error() -> None:
    data: dict[str, JSON] = {"shadowedRange": {"start": 1, "end": 2}, "shadowedSeqs": [4, 6]}
    with pytest.raises(FoldError, match="shadowedTokenCount"):
        claim_of(event("compaction/prune", data))


def test_claim_without_a_range_is_an_error() -> None:
    with pytest.raises(FoldError, match="shadowedRange"):
        claim_of(event("compaction/summary", {"shadowedSeqs": [], "shadowedTokenCount": 1}))


def test_claim_round_trips_through_json() -> None:
    claim = Claim(1, 2, 90, (4, 6))
    assert Claim.from_json(claim.to_json()) == claim


def test_a_replacement_matches_the_claimed_range_as_written() -> None:
    claim = Claim(1, 2, 90, (4, 6))
    assert claim_matches(claim, Replace(1, 2, False))
    assert not claim_matches(claim, Replace(1, 3, False))


def test_a_seq_spelled_replacement_also_matches_the_shadowed_seqs() -> None:
    claim = Claim(1, 2, 90, (4, 6))
    assert claim_matches(claim, Replace(4, 6, True))
    assert not claim_matches(claim, Replace(4, 6, False))


def test_check_claim_refuses_another_range_naming_both() -> None:
    with pytest.raises(FoldError, match=r"replaces start/end 0..2 but the metering event claimed 1..2"):
        check_claim(event("user/message"), Claim(1, 2, 90, (4, 6)), Replace(0, 2, False))


def test_replaced_seqs_come_from_a_one_node_seq_spelling_or_the_source_seqs() -> None:
    assert replaced_seqs(event("user/message"), Replace(5, 5, True)) == (5,)
    sourced = EventRecord(seq=9, type="user/message", time=None, data={}, source_event_seqs=(2, 3))
    assert replaced_seqs(sourced, Replace(0, 1, False)) == (2, 3)
    assert replaced_seqs(event("user/message"), Replace(0, 0, False)) is None


def test_usage_reads_disjoint_buckets_and_the_one_hour_share() -> None:
    usage: dict[str, JSON] = {
        "inputTokens": 10,
        "cacheReadTokens": 100,
        "cacheWriteTokens": 20,
        "cacheWrite1hTokens": 5,
        "outputTokens": 7,
    }
    report = usage_of(event("assistant/message", {"usage": usage}))
    assert report is not None
    assert (report.uncached_input, report.cache_read, report.cache_write, report.cache_write_1h) == (
        10,
        100,
        20,
        5,
    )
    assert (report.output, report.prompt_total, report.cache_reported) == (7, 130, True)


def test_usage_without_cache_buckets_is_not_a_cache_report() -> None:
    report = usage_of(event("assistant/message", {"usage": {"inputTokens": 10, "outputTokens": 1}}))
    assert report is not None
    assert not report.cache_reported


def test_absent_usage_is_none() -> None:
    assert usage_of(event("assistant/message", {})) is None


def test_negative_usage_is_an_error_naming_the_field() -> None:
    with pytest.raises(FoldError, match=r"data.usage.outputTokens"):
        usage_of(event("assistant/message", {"usage": {"outputTokens": -1}}))


def test_report_key_names_the_step_or_the_compaction() -> None:
    assert report_key(event("assistant/message", {"turn": 2, "step": 1})) == "step:2:1"
    assert report_key(event("compaction/summary", {"compactionId": "c9"})) == "compaction:c9"
