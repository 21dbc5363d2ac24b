"""Each scenario of three hand-built sessions against the figures the provider's rules give by hand.

The sessions are in :mod:`tests.projections.cache.whatif.sessions`: T(N) = 8,500 + 800 (N - 1)
prompt tokens for request N, 200 output tokens each, Sonnet 4.5 at $3 input, $3.75 5-minute write,
$6 1-hour write, $0.30 read and $15 output per million tokens. Sums used below:
sum of T(1..10) = 121,000; sum of T(1..9) = 105,300; T(10) = 15,700.
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from projections.cache.whatif.results import ScenarioResult
from projections.cache.whatif.scenarios import (
    COMPOSABLE,
    SCENARIO_NAMES,
    UnknownScenarioError,
    scenario_named,
)
from projections.cache.whatif.session import NoRequestsError, WhatIf, whatif_session
from projections.cache.whatif.tally import UnpricedModelError
from projections.formats import read_sessions
from projections.normalized import RequestRecord
from tests.projections.cache.whatif.sessions import (
    OUTPUT,
    SONNET,
    clock_session,
    idle_session,
    prompt,
    system_only_session,
)

OUTPUT_COST = Decimal(10 * OUTPUT * 15) / 1_000_000  # ten requests of 200 output tokens at $15


def figures(result: ScenarioResult, *, read: int, write: int, cost: Decimal) -> None:
    """The scenario read and wrote what the rules give within 3 % or 50 tokens, and cost within 3 %."""
    assert result.supported, result.reason
    assert result.tokens is not None
    assert result.cost is not None
    assert abs(result.tokens.cache_read - read) <= max(50, 0.03 * read), (result.scenario, result.tokens)
    assert abs(result.tokens.written - write) <= max(50, 0.03 * write), (result.scenario, result.tokens)
    assert abs(result.cost - cost) <= Decimal("0.03") * cost, (result.scenario, result.cost, cost)


def micro(amount: float) -> Decimal:
    return Decimal(str(amount)) / 1_000_000


def cheapest_single(whatif: WhatIf) -> Decimal:
    costs = [r.cost for r in whatif.results if r.scenario != "best" and r.supported and r.cost is not None]
    return min(costs)


# --- a clock in the system prompt -----------------------------------------------------------------


def test_a_clock_in_the_system_prompt_makes_every_request_write_its_whole_prompt() -> None:
    whatif = whatif_session(clock_session(), prices=[SONNET])
    # Each request reads nothing and writes T(N) at 3.75: 121,000 x 3.75 = 453,750 micro-dollars.
    figures(whatif.result("as-recorded"), read=0, write=121_000, cost=micro(453_750) + OUTPUT_COST)


def test_moving_the_clock_after_the_history_reads_each_predecessor_s_prompt() -> None:
    whatif = whatif_session(clock_session(), prices=[SONNET])
    # Request 1 writes 8,500; request N > 1 reads T(N-1) and writes the 800 its turn adds:
    # reads 105,300 x 0.30 = 31,590, writes (8,500 + 9 x 800) = 15,700 x 3.75 = 58,875.
    result = whatif.result("stable-prefix")
    figures(result, read=105_300, write=15_700, cost=micro(31_590 + 58_875) + OUTPUT_COST)
    assert result.touched == 9
    assert result.tokens is not None
    assert result.tokens.prompt == 121_000


def test_each_request_of_the_clock_session_keeps_its_own_figures_under_each_scenario() -> None:
    figures_by = whatif_session(clock_session(), prices=[SONNET]).request_tokens()
    recorded, stable = figures_by["as-recorded"], figures_by["stable-prefix"]
    # As recorded, request N writes its whole prompt T(N); with the clock moved, request 1 is as it
    # was (so not listed) and request N > 1 reads T(N-1) and writes the 800 its turn adds.
    assert recorded == {f"msg_{n}": [0, 0, prompt(n), 0, OUTPUT] for n in range(1, 11)}
    assert set(stable) == {f"msg_{n}" for n in range(2, 11)}
    for n in range(2, 11):
        uncached, read, write_5m, write_1h, output = stable[f"msg_{n}"]
        assert abs(read - prompt(n - 1)) <= 50, (n, stable[f"msg_{n}"])
        assert abs(write_5m - 800) <= 50, (n, stable[f"msg_{n}"])
        assert (uncached + read + write_5m + write_1h, output) == (prompt(n), OUTPUT)


def test_a_scenarios_figures_per_request_add_up_to_its_totals() -> None:
    for session in (clock_session(), idle_session(), system_only_session()):
        whatif = whatif_session(session, prices=[SONNET])
        by_request = whatif.request_tokens()
        recorded = by_request["as-recorded"]
        for result in whatif.results:
            if not result.supported:
                assert result.scenario not in by_request
                continue
            every = {**recorded, **by_request[result.scenario]}
            summed = [sum(column) for column in zip(*every.values(), strict=True)]
            assert result.tokens is not None
            assert summed == list(result.tokens), result.scenario


def test_the_1_hour_ttl_only_makes_the_clock_session_dearer() -> None:
    whatif = whatif_session(clock_session(), prices=[SONNET])
    # Nothing idles past 5 minutes: the same writes, at 6 instead of 3.75.
    result = whatif.result("ttl-1h")
    figures(result, read=0, write=121_000, cost=micro(121_000 * 6) + OUTPUT_COST)
    assert result.saving is not None
    assert result.saving < 0


def test_the_best_fix_of_the_clock_session_is_the_stable_prefix() -> None:
    whatif = whatif_session(clock_session(), prices=[SONNET])
    best = whatif.result("best")
    assert best.combination == ("stable-prefix",)
    figures(best, read=105_300, write=15_700, cost=micro(90_465) + OUTPUT_COST)
    assert best.cost is not None
    assert best.cost <= cheapest_single(whatif)


# --- idle gaps past the 5-minute TTL --------------------------------------------------------------


def test_idle_gaps_past_five_minutes_write_the_prompt_again() -> None:
    whatif = whatif_session(idle_session(), prices=[SONNET])
    # Gaps of 10 min, 30 min and 2 h before requests 4, 6 and 8: they write T(4), T(6), T(8).
    # Reads T(1) + T(2) + T(4) + T(6) = 8,500 + 9,300 + 10,900 + 12,500 = 41,200;
    # writes 8,500 + 800 + 800 + 10,900 + 800 + 12,500 + 800 + 14,100 = 49,200.
    cost = micro(41_200 * 0.30 + 49_200 * 3.75) + Decimal(8 * OUTPUT * 15) / 1_000_000
    figures(whatif.result("as-recorded"), read=41_200, write=49_200, cost=cost)


def test_the_1_hour_ttl_keeps_the_entries_through_gaps_under_an_hour_only() -> None:
    whatif = whatif_session(idle_session(), prices=[SONNET])
    # The 10- and 30-minute gaps now read T(3) and T(5); the 2-hour gap still writes T(8) = 14,100.
    # Reads 8,500 + 9,300 + 10,100 + 10,900 + 11,700 + 12,500 = 63,000; writes 8,500 + 6 x 800 + 14,100
    # = 27,400, all at the 1-hour rate.
    cost = micro(63_000 * 0.30 + 27_400 * 6) + Decimal(8 * OUTPUT * 15) / 1_000_000
    result = whatif.result("ttl-1h")
    figures(result, read=63_000, write=27_400, cost=cost)
    assert result.tokens is not None
    assert result.tokens.cache_write_5m == 0
    best = whatif.result("best")
    assert best.combination == ("ttl-1h",)
    assert best.cost is not None
    assert best.cost <= cheapest_single(whatif)


def test_a_stable_prompt_gains_nothing_from_the_stable_prefix() -> None:
    whatif = whatif_session(idle_session(), prices=[SONNET])
    assert whatif.result("stable-prefix").saving == 0
    assert whatif.result("stable-prefix").touched == 0


# --- a breakpoint on the system prompt only -------------------------------------------------------


def test_a_breakpoint_on_the_system_prompt_only_sends_the_history_uncached() -> None:
    whatif = whatif_session(system_only_session(), prices=[SONNET])
    # Request 1 writes 8,000; the others read it. The history, 121,000 - 10 x 8,000 = 41,000, is
    # uncached: 8,000 x 3.75 + 9 x 8,000 x 0.30 + 41,000 x 3 = 30,000 + 21,600 + 123,000.
    result = whatif.result("as-recorded")
    figures(result, read=72_000, write=8_000, cost=micro(174_600) + OUTPUT_COST)
    assert result.tokens is not None
    assert result.tokens.uncached_input == 41_000


def test_a_rolling_breakpoint_on_the_last_message_caches_the_history() -> None:
    whatif = whatif_session(system_only_session(), prices=[SONNET])
    # With a marker on the last message each request reads T(N-1) and writes 800, as above.
    result = whatif.result("rolling-breakpoint")
    figures(result, read=105_300, write=15_700, cost=micro(90_465) + OUTPUT_COST)
    assert result.tokens is not None
    assert result.tokens.uncached_input == 0
    assert result.touched == 10
    best = whatif.result("best")
    assert "rolling-breakpoint" in best.combination
    assert best.cost is not None
    assert best.cost <= cheapest_single(whatif)


def test_the_recorded_replay_has_no_error_against_usage_the_rules_explain() -> None:
    for session in (clock_session(), idle_session(), system_only_session()):
        recorded = whatif_session(session, prices=[SONNET]).result("as-recorded")
        assert recorded.reported_tokens == recorded.tokens
        assert recorded.to_json()["rules_error_usd"] == 0


# --- what the results say ---------------------------------------------------------------------------


def test_every_result_has_the_fields_the_command_prints() -> None:
    rows = whatif_session(clock_session(), prices=[SONNET]).to_json()
    assert [row["scenario"] for row in rows] == list(SCENARIO_NAMES)
    for row in rows:
        assert {"scenario", "supported", "reason", "requests", "cost_usd"} <= set(row)
        assert {"uncached_tokens", "read_tokens", "write_tokens"} <= set(row)
        assert row["requests"] == 10
        assert isinstance(row["reason"], str)
        assert row["reason"]
    json.dumps(rows)  # plain JSON throughout
    unsupported = {row["scenario"]: row for row in rows if not row["supported"]}
    assert set(unsupported) == {"no-attribution-block", "stable-cache-key", "extended-retention"}
    assert unsupported["no-attribution-block"]["cost_usd"] is None


def test_savings_are_put_down_to_the_cause_of_the_recorded_miss() -> None:
    stable = whatif_session(clock_session(), prices=[SONNET]).result("stable-prefix")
    by_cause = {group.key.cause: group.saving for group in stable.groups}
    assert set(by_cause) == {"", "prefix-changed@system"}  # the first request had nothing to miss
    assert by_cause[""] == 0
    assert stable.saving == by_cause["prefix-changed@system"]


def test_only_the_scenarios_asked_for_are_replayed_after_the_recorded_one() -> None:
    whatif = whatif_session(clock_session(), prices=[SONNET], scenarios=["ttl-1h"])
    assert [result.scenario for result in whatif.results] == ["as-recorded", "ttl-1h"]


def test_best_combines_only_the_scenarios_the_data_supports() -> None:
    best = whatif_session(idle_session(), prices=[SONNET]).result("best")
    names = {s.name for s in COMPOSABLE}
    assert set(best.combination) <= names - {"no-attribution-block", "stable-cache-key", "extended-retention"}
    assert "cheapest of" in best.reason


# --- bad input --------------------------------------------------------------------------------------


def test_an_unknown_scenario_is_refused_by_name() -> None:
    with pytest.raises(
        UnknownScenarioError, match=r"unknown scenario 'ttl-2h'; the scenarios are: as-recorded"
    ):
        whatif_session(clock_session(), prices=[SONNET], scenarios=["ttl-2h"])


def test_a_session_without_usage_is_refused() -> None:
    without = [replace(record, usage=None) for record in clock_session()]
    with pytest.raises(NoRequestsError, match="no request with reported usage"):
        whatif_session(without, prices=[SONNET])
    with pytest.raises(NoRequestsError):
        whatif_session([], prices=[SONNET])


def test_a_model_without_a_price_is_refused_by_name() -> None:
    with pytest.raises(UnpricedModelError, match="no price for model 'claude-sonnet-4-5-20250929'"):
        whatif_session(clock_session(), prices=[])


# --- a transcript -----------------------------------------------------------------------------------


def transcript_line(n: int, minute: float, *, read: int, write: int, uncached: int = 3) -> dict[str, object]:
    seconds = int(minute * 60)
    return {
        "type": "assistant",
        "sessionId": "cc-1",
        "uuid": f"a{n}",
        "parentUuid": f"a{n - 1}" if n else None,
        "version": "2.1.40",
        "timestamp": f"2026-01-05T09:{seconds // 60:02d}:{seconds % 60:02d}.000Z",
        "requestId": f"req_{n}",
        "message": {
            "id": f"msg_{n}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "done"}],
            "usage": {
                "input_tokens": uncached,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
                "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 100,
            },
        },
    }


def transcript_records(tmp_path: Path) -> list[RequestRecord]:
    """Three calls of a Claude Code transcript: a minute apart, then 20 minutes idle."""
    lines = [
        transcript_line(0, 0, read=0, write=9_000),
        transcript_line(1, 1, read=9_000, write=400),
        transcript_line(2, 21, read=0, write=9_600),  # the 5-minute entry expired: written again
    ]
    path = tmp_path / "cc-1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = list(read_sessions(path))
    return [item for item in session.items if isinstance(item, RequestRecord)]


def test_a_transcript_prices_the_1_hour_ttl_and_says_why_it_cannot_price_the_rest(tmp_path: Path) -> None:
    whatif = whatif_session(transcript_records(tmp_path), prices=[SONNET])
    rows = {row["scenario"]: row for row in whatif.to_json()}

    # As recorded: 9,000 + 400 + 9,600 written at 3.75, 9,000 read, 9 uncached, 300 output.
    recorded = whatif.result("as-recorded")
    figures(recorded, read=9_000, write=19_000, cost=micro(9_000 * 0.30 + 19_000 * 3.75 + 9 * 3 + 300 * 15))
    # An hour's lifetime keeps call 2's 9,400 tokens for call 3, which writes only its last 200.
    hour = whatif.result("ttl-1h")
    figures(hour, read=18_400, write=9_600, cost=micro(18_400 * 0.30 + 9_600 * 6 + 9 * 3 + 300 * 15))
    assert hour.saving is not None
    assert hour.saving > 0
    assert whatif.result("best").combination == ("ttl-1h",)

    for name in ("stable-prefix", "rolling-breakpoint", "no-attribution-block"):
        assert rows[name]["supported"] is False
        assert "without request bodies" in str(rows[name]["reason"])
    assert "which bytes changed in place is unknown" in str(rows["stable-prefix"]["reason"])
    assert rows["ttl-1h"]["supported"] is True
    assert rows["ttl-1h"]["reason"]


def test_a_scenario_replays_on_its_own_what_the_session_replay_gives_it() -> None:
    alone = whatif_session(clock_session(), prices=[SONNET], scenarios=["stable-prefix"]).result(
        "stable-prefix"
    )
    together = whatif_session(clock_session(), prices=[SONNET]).result("stable-prefix")
    assert alone == together
    assert alone.change == scenario_named("stable-prefix").change
