"""``contextBreakdown`` versions 7 and 8: the surface rules of 5 and 6 plus the request envelope."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.folds.breakdown import (
    Breakdown,
    ContextBreakdownV5,
    ContextBreakdownV6,
    ContextBreakdownV7,
    ContextBreakdownV8,
)
from projections.folds.fold import fold, fold_views, resume, to_row
from projections.folds.projection import Projection
from projections.prices import event_price
from projections.synthetic import LogBuilder
from tests.projections.folds.test_breakdown import OPS, exact_log

V7 = ContextBreakdownV7()
V8 = ContextBreakdownV8()
ENVELOPED = pytest.mark.parametrize("projection", [V7, V8], ids=["v7", "v8"])

TOOLS = [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}]
TOOLS_JSON = '[{"name":"bash","description":"Run a command","parameters":{"type":"object"}}]'
"""``TOOLS`` as JavaScript's ``JSON.stringify`` writes it: no spaces, keys in order."""


def view_of(projection: Projection[Any, Breakdown], log: LogBuilder) -> Breakdown:
    return projection.view(fold(projection, log.events))


def quarter(text: str) -> int:
    return math.ceil(len(text) / 4)


@ENVELOPED
def test_tools_tokens_are_zero_before_any_header(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.user("hi")
    assert view_of(projection, log) == Breakdown(0, event_price(log.events[0]), 0)


@ENVELOPED
def test_tools_tokens_price_the_newest_headers_schemas_as_their_compact_json(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.header(tools=TOOLS)
    assert view_of(projection, log).tools_tokens == quarter(TOOLS_JSON) + 4
    log.header(tools=TOOLS[:0])
    assert view_of(projection, log).tools_tokens == 0


@ENVELOPED
def test_a_header_era_log_takes_its_system_prompt_from_the_newest_header(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.header(system="You are a v0 agent.", tools=TOOLS)
    log.user("hi")
    log.assistant("hello")
    messages = event_price(log.events[1]) + event_price(log.events[2])
    assert view_of(projection, log) == Breakdown(
        quarter("You are a v0 agent.") + 4, messages, quarter(TOOLS_JSON) + 4
    )
    log.header(tools=TOOLS)  # a later request without a system prompt
    assert view_of(projection, log) == Breakdown(0, messages, quarter(TOOLS_JSON) + 4)


@ENVELOPED
def test_a_system_prompt_on_the_surface_wins_over_the_headers(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.header(system="header prompt, not sent twice")
    log.system("surface prompt")
    log.user("hi")
    system = event_price(log.events[1])
    assert view_of(projection, log) == Breakdown(system, event_price(log.events[2]), 0)


@ENVELOPED
def test_a_header_between_the_meter_and_the_replacement_expires_the_claim(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.user("a" * 400)
    log.user("b")
    log.meter("compaction/summary", 0, 0)
    log.header(tools=TOOLS)
    log.replace("user/message", "summary", 0, 0)
    # Without the claim the replacement is unmetered: version 7 recounts the range, version 8 folds
    # it at zero delta, as the harness's meter does.
    surface = event_price(log.events[1]) + (
        event_price(log.events[4]) if projection is V7 else event_price(log.events[0])
    )
    assert view_of(projection, log).message_tokens == surface


@ENVELOPED
def test_the_envelope_survives_a_row_round_trip(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.header(system="prompt", tools=TOOLS)
    log.user("hi")
    row = to_row(projection, fold(projection, log.events[:1]), 0)
    state, last = resume(projection, row, log.events)
    assert last == 1
    assert projection.view(state) == view_of(projection, log)
    assert row.val["envelope"] == [quarter("prompt") + 4, quarter(TOOLS_JSON) + 4]


def test_the_surface_only_versions_keep_no_envelope_in_their_rows() -> None:
    log = LogBuilder()
    log.header(system="prompt", tools=TOOLS)
    assert "envelope" not in to_row(ContextBreakdownV5(), fold(ContextBreakdownV5(), log.events), 0).val
    assert "envelope" not in to_row(ContextBreakdownV6(), fold(ContextBreakdownV6(), log.events), 0).val


@settings(max_examples=200, deadline=None)
@given(OPS, st.lists(st.tuples(st.integers(0, 40), st.booleans(), st.booleans()), max_size=4))
def test_versions_7_and_8_keep_the_surface_rules_of_5_and_6_and_add_the_envelope(
    ops: list[tuple[str, int, int, int, bool]], headers: list[tuple[int, bool, bool]]
) -> None:
    log = exact_log(ops)
    for length, with_system, with_tools in headers:
        log.header(system="s" * length if with_system else None, tools=TOOLS if with_tools else None)
        log.user("after a header")
    for old, new in ((ContextBreakdownV5(), V7), (ContextBreakdownV6(), V8)):
        for before, after in zip(fold_views(old, log.events), fold_views(new, log.events), strict=True):
            envelope = new.deserialize(new.serialize(after.state)).envelope
            assert after.view.tools_tokens == envelope.tools
            if before.view.system_tokens > 0:  # a surface system prompt: the surface rules alone
                assert (after.view.system_tokens, after.view.message_tokens) == (
                    before.view.system_tokens,
                    before.view.message_tokens,
                )
            else:  # no surface system prompt: the header's, and the whole surface is messages
                assert after.view.system_tokens == envelope.system
                assert after.view.message_tokens == before.view.message_tokens


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_v7_and_v8_agree_after_every_event_when_replacements_are_metered_exactly(
    ops: list[tuple[str, int, int, int, bool]],
) -> None:
    log = exact_log(ops)
    log.header(system="prompt", tools=TOOLS)
    log.user("hi")
    for v7_step, v8_step in zip(fold_views(V7, log.events), fold_views(V8, log.events), strict=True):
        assert v7_step.view == v8_step.view, f"diverged at seq {v7_step.seq}"
