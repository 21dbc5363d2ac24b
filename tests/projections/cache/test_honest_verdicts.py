"""Verdicts claim no more than the data shows: ranked candidates for a usage-only miss, badges that
never call a cold write "no miss", and one meaning per label."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from projections.cache.analysis import Figures
from projections.cache.explain.miss_candidates import Level, miss_candidates
from projections.cache.explain.verdict import (
    BADGE_MEANINGS,
    LABEL_MEANINGS,
    badge_for,
    label_meaning,
    verdict,
)
from projections.cache.session_analysis import analyse_records
from projections.normalized import RequestRecord, Usage
from tests.projections.cache.builders import SONNET, T0, anthropic_usage, body, conversation, record


def call(key: str, ordinal: int, seconds: float, read: int, write: int) -> RequestRecord:
    return RequestRecord(
        key=key,
        ordinal=ordinal,
        lineage="main",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=SONNET,
        started_at=T0 + timedelta(seconds=seconds),
        usage=anthropic_usage(40, read, write),
    )


def test_a_read_that_falls_to_exactly_the_system_and_tools_level_ranks_a_client_side_change_first() -> None:
    # The first call reads the 9,000-token static prefix; later the read falls back to exactly it.
    records = [
        call("c0", 0, 0, 9_000, 20_000),
        call("c1", 1, 30, 29_000, 1_000),
        call("c2", 2, 60, 9_000, 22_000),
    ]
    result = analyse_records(records).results[2]

    causes = [c["cause"] for c in result.data["candidates"]]
    assert result.label == "unexplained"
    assert causes[0] == "fell-to-level"
    assert "system + tools" in result.data["candidates"][0]["evidence"]
    assert "call #0" in result.data["candidates"][0]["evidence"]
    assert "identical prefix inside the TTL" not in str(result.data["label_detail"])
    assert "likeliest: fell-to-level" in result.data["warnings"][0]["message"]


def test_a_gap_close_to_the_ttl_is_a_candidate_but_a_short_one_is_not() -> None:
    near = miss_candidates(5_000, [], gap_seconds=280, ttl_seconds=300)
    short = miss_candidates(5_000, [], gap_seconds=30, ttl_seconds=300)

    assert [c.cause for c in near] == ["ttl-gap", "bytes-changed", "provider-side"]
    assert [c.cause for c in short] == ["bytes-changed", "provider-side"]


def test_a_client_update_between_the_calls_is_ranked_before_the_causes_nothing_shows() -> None:
    records = [call("c0", 0, 0, 0, 20_000), call("c1", 1, 30, 5_000, 16_000)]
    records = [replace(records[0], client_version="2.1.38"), replace(records[1], client_version="2.1.39")]
    result = analyse_records(records).results[1]

    causes = [c["cause"] for c in result.data["candidates"]]
    assert causes == ["client-updated", "bytes-changed", "provider-side"]
    assert "2.1.38 to 2.1.39" in result.data["candidates"][0]["evidence"]


def test_a_read_of_no_earlier_level_is_not_called_a_fall_to_one() -> None:
    levels = [Level(9_000, 0, "read", True), Level(29_000, 0, "read + write", False)]

    assert [c.cause for c in miss_candidates(12_345, levels, 30, 300)] == ["bytes-changed", "provider-side"]
    # A read of nothing matches no level, even a level of zero.
    assert miss_candidates(0, [Level(0, 0, "read", True)], 30, 300)[0].cause == "bytes-changed"


def figures(read: int | None, write: int | None, predicted: int | None) -> Figures:
    return Figures(None, None, read, write, predicted, None)


def test_a_request_that_read_nothing_and_wrote_its_prompt_is_a_cold_write_not_no_miss() -> None:
    assert badge_for(None, figures(0, 15_000, 0)) == "cold write"
    assert badge_for(None, figures(0, 15_000, None)) == "cold write"
    assert badge_for(None, figures(0, 0, 0)) == "not cached"
    assert badge_for(None, figures(11_000, 300, None)) == "not predicted"
    assert badge_for(None, figures(11_000, 300, 11_000)) == "no miss"
    assert badge_for("ttl-expired", figures(0, 15_000, 0)) == "ttl-expired"


def test_the_first_request_of_a_body_session_gets_the_cold_write_badge_and_its_meaning() -> None:
    history = conversation(20)
    first = record("r0", 0, body(history, marks=(19,)), usage=anthropic_usage(10, 0, 15_000))
    result = analyse_records([first]).results[0]

    said = verdict(result.data, has_body=True)

    assert (said.label, said.badge) == (None, "cold write")
    assert said.meaning == BADGE_MEANINGS["cold write"]


def test_every_label_the_engine_gives_has_one_meaning() -> None:
    engine_labels = [
        "no-breakpoint",
        "below-minimum",
        "model-changed",
        "prefix-changed@messages:12",
        "prefix-changed@system",
        "no-write-at-reusable-position",
        "ttl-expired",
        "concurrent",
        "beyond-lookback",
        "partial-hit",
        "unexplained",
    ]
    meanings = [label_meaning(label) for label in engine_labels]

    assert all(meanings)
    assert label_meaning("prefix-changed@messages:12") == LABEL_MEANINGS["prefix-changed"]
    assert label_meaning("no-such-label") == ""


def test_a_request_whose_read_was_not_reported_never_shows_no_miss_or_a_cold_write() -> None:
    assert badge_for(None, figures(None, 300, 11_000)) == "read not reported"
    assert badge_for(None, figures(None, 15_000, 0)) == "read not reported"
    assert badge_for(None, figures(None, None, None)) == "read not reported"


def test_a_read_of_nothing_with_an_unreported_write_is_not_called_not_cached() -> None:
    # "not cached" says nothing was written; a usage without a write field cannot show that.
    assert badge_for(None, figures(0, None, None)) == "not predicted"
    assert badge_for(None, figures(0, None, 0)) == "no miss"


def deepseek_call(key: str, ordinal: int, seconds: float, read: int) -> RequestRecord:
    return replace(
        call(key, ordinal, seconds, read, 0),
        provider="deepseek-official",
        model="deepseek-chat",
        usage=Usage(400, read, None, None, 90, "dsh"),
    )


def test_a_call_after_one_that_reported_no_write_is_not_predicted_and_claims_no_hit() -> None:
    results = analyse_records([deepseek_call("d0", 0, 0, 0), deepseek_call("d1", 1, 30, 8_064)]).results

    second = results[1]
    said = verdict(second.data, has_body=False)
    assert second.predicted_read is None
    assert second.data["figures"]["predicted_read"] is None
    assert second.data["read_from"] is None
    assert said.badge == "not predicted"
    assert said.meaning == BADGE_MEANINGS["not predicted"]
    assert "unknown" in said.detail
    assert not second.material


def test_a_call_whose_read_was_not_reported_is_no_material_miss() -> None:
    unread = replace(call("c1", 1, 30, 0, 300), usage=Usage(40, None, 300, 0, 10, "anthropic"))
    result = analyse_records([call("c0", 0, 0, 0, 20_000), unread]).results[1]

    assert result.predicted_read == 20_000
    assert (result.label, result.material) == ("", False)
    assert verdict(result.data, has_body=False).badge == "read not reported"
