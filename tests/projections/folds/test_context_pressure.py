from __future__ import annotations

import math
from dataclasses import replace

from projections.folds.context_pressure import ContextPressure, ContextPressureV1, ContextPressureV2
from projections.folds.fold import fold, resume, to_row
from projections.prices import event_price, message_price
from projections.synthetic import LogBuilder

PRESSURE = ContextPressureV1()
USAGE = {"inputTokens": 100, "cacheReadTokens": 1_000, "cacheWriteTokens": 50, "outputTokens": 30}


def view(log: LogBuilder) -> ContextPressure:
    return PRESSURE.view(fold(PRESSURE, log.events))


def test_before_any_report_there_is_only_the_surface() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("hi")
    assert view(log) == ContextPressure(None, log.surface_total(), None, None)


def test_a_report_sets_the_pressure_to_prompt_plus_output() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.assistant("answer", usage=USAGE)
    assert view(log) == ContextPressure(1_180, log.surface_total(), 1_180, None)


def test_projected_adds_the_surface_growth_since_the_sample() -> None:
    log = LogBuilder()
    log.assistant("answer", usage=USAGE)
    added = log.user("a follow-up question")
    assert view(log).projected == 1_180 + event_price(added)


def test_the_newest_report_wins() -> None:
    log = LogBuilder()
    log.assistant("a", usage=USAGE, step=0)
    log.assistant("b", usage={"inputTokens": 10, "cacheReadTokens": 2_000, "outputTokens": 5}, step=1)
    assert view(log).pressure == 2_015
    assert view(log).projected == 2_015


def test_a_metered_replacement_moves_the_projection_by_the_claim() -> None:
    log = LogBuilder()
    log.user("a long question " * 40)
    log.assistant("answer", usage=USAGE)
    log.compact(0, 1, "summary", tokens=400)
    checkpoint = log.events[-2]
    assert view(log).projected == 1_180 - 400 + event_price(checkpoint)


def test_an_unmetered_replacement_folds_at_zero_delta() -> None:
    log = LogBuilder()
    log.user("a long question " * 40)
    log.assistant("answer", usage=USAGE)
    before = view(log)
    log.replace("user/message", "short", 0, 0)
    assert view(log) == before


def test_projected_is_floored_at_zero() -> None:
    log = LogBuilder()
    log.assistant("answer", usage={"inputTokens": 1})
    log.compact(0, 0, "s", tokens=100_000)
    assert view(log).projected == 0


def test_request_context_sets_the_window_and_the_fill() -> None:
    log = LogBuilder()
    log.event("request/context", {"provider": "p", "model": "m", "contextWindow": 2_000})
    log.assistant("answer", usage=USAGE)
    assert view(log).context_window == 2_000
    assert view(log).fill == 1_180 / 2_000


def test_fill_is_unknown_without_a_window() -> None:
    log = LogBuilder()
    log.assistant("answer", usage=USAGE)
    assert view(log).fill is None


def test_a_v0_header_system_prompt_counts_on_the_surface() -> None:
    log = LogBuilder()
    log.header(system="You are a v0 agent.")
    assert view(log).surface == message_price({"role": "system", "content": "You are a v0 agent."})


def test_version_2_prices_a_header_system_prompt_as_the_meter_and_the_newest_header_wins() -> None:
    log = LogBuilder()
    log.header(system="You are a v0 agent.")
    log.user("hi")
    user = event_price(log.events[1])
    v2 = ContextPressureV2()
    assert v2.view(fold(v2, log.events)).surface == math.ceil(len("You are a v0 agent.") / 4) + 4 + user
    log.header()  # a later request without a system prompt
    assert v2.view(fold(v2, log.events)).surface == user
    assert view(log).surface == message_price({"role": "system", "content": "You are a v0 agent."}) + user


def test_compaction_usage_is_not_a_sample() -> None:
    log = LogBuilder()
    log.user("a")
    summary = log.meter("compaction/summary", 0, 0)
    log.events[-1] = replace(summary, data={**summary.data, "usage": USAGE})
    assert view(log).pressure is None


def test_view_serializes_to_camel_case_json() -> None:
    assert ContextPressure(1, 2, 3, 4).to_json() == {
        "pressure": 1,
        "surface": 2,
        "projected": 3,
        "contextWindow": 4,
    }


def test_state_survives_a_row_round_trip() -> None:
    log = LogBuilder()
    log.event("request/context", {"provider": "p", "model": "m", "contextWindow": 9_000})
    log.assistant("answer", usage=USAGE)
    log.meter("compaction/summary", 0, 0)
    row = to_row(PRESSURE, fold(PRESSURE, log.events), seq=2)
    log.replace("user/message", "checkpoint", 0, 0)
    state, _ = resume(PRESSURE, row, log.events)
    assert PRESSURE.view(state) == view(log)
