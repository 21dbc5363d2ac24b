from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.events import Claim, FoldError
from projections.folds.breakdown import (
    Breakdown,
    BreakdownV6State,
    ContextBreakdownV5,
    ContextBreakdownV6,
    SystemPrompt,
)
from projections.folds.fold import fold, fold_views, resume, state_size_bytes, to_row
from projections.folds.projection import Projection
from projections.prices import event_price
from projections.synthetic import LogBuilder

V5 = ContextBreakdownV5()
V6 = ContextBreakdownV6()
BOTH = pytest.mark.parametrize("projection", [V5, V6], ids=["v5", "v6"])


def view_of(projection: Projection[Any, Breakdown], log: LogBuilder) -> Breakdown:
    return projection.view(fold(projection, log.events))


def price(log: LogBuilder, seq: int) -> int:
    return event_price(log.events[seq])


@BOTH
def test_empty_log_has_an_empty_breakdown(projection: Projection[Any, Breakdown]) -> None:
    assert view_of(projection, LogBuilder()) == Breakdown(0, 0)


@BOTH
def test_append_adds_its_price_to_messages(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.user("hello there")
    log.assistant("general kenobi")
    assert view_of(projection, log) == Breakdown(0, price(log, 0) + price(log, 1))


@BOTH
def test_system_append_sets_the_system_tokens(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.system("you are a careful engineer")
    log.user("hi")
    assert view_of(projection, log) == Breakdown(price(log, 0), price(log, 1))


@BOTH
def test_older_system_prompts_count_as_messages(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.system("first prompt")
    log.user("hi")
    log.system("a second, longer system prompt")
    assert view_of(projection, log) == Breakdown(price(log, 2), price(log, 0) + price(log, 1))


def test_v6_system_append_joins_the_end_of_the_system_list() -> None:
    log = LogBuilder()
    log.system("one")
    log.user("hi")
    log.system("two")
    state = fold(V6, log.events)
    assert [prompt.seq for prompt in state.systems] == [0, 2]


@BOTH
def test_summary_arms_a_claim(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.meter("compaction/summary", 0, 1, tokens=77)
    state = fold(projection, log.events)
    assert state.claim == Claim(start=0, end=1, tokens=77, shadowed=(0, 1))


@BOTH
def test_prune_arms_a_claim(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.tool_result("long output")
    log.meter("compaction/prune", 0, 0, tokens=5)
    state = fold(projection, log.events)
    assert state.claim is not None
    assert state.claim.tokens == 5


@BOTH
def test_a_replacement_consumes_the_claim(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.tool_result("long output")
    log.prune(0, "[pruned]")
    assert fold(projection, log.events).claim is None


@BOTH
def test_a_claim_expires_at_the_next_event_that_is_not_a_replacement(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.meter("compaction/summary", 0, 1, tokens=1)
    log.event("compaction/end", {"compactionId": "c", "turn": 1})
    assert fold(projection, log.events).claim is None
    # With the claim gone, a later replacement of another range is unmetered, not an error.
    log.replace("user/message", "checkpoint", 1, 1)
    fold(projection, log.events)


@BOTH
def test_an_append_also_expires_the_claim(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.user("a")
    log.meter("compaction/summary", 0, 0, tokens=1)
    log.user("b")
    assert fold(projection, log.events).claim is None


def test_v6_metered_replacement_subtracts_the_claim_price_and_adds_the_new_node() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a long question " * 20)
    log.assistant("a long answer " * 20)
    log.compact(1, 2, "summary", tokens=900)
    checkpoint = log.events[-2]
    total = price(log, 0) + price(log, 1) + price(log, 2) - 900 + event_price(checkpoint)
    assert view_of(V6, log) == Breakdown(price(log, 0), max(0, total - price(log, 0)))


def test_v5_metered_replacement_subtracts_the_exact_price_of_the_range() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a long question " * 20)
    log.assistant("a long answer " * 20)
    log.compact(1, 2, "summary", tokens=9)
    checkpoint = log.events[-2]
    assert view_of(V5, log) == Breakdown(price(log, 0), event_price(checkpoint))


@BOTH
def test_metered_replacement_accepts_the_seq_spelling(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("question")
    log.assistant("answer")
    log.compact(1, 2, "summary", by_seq=True)
    assert view_of(projection, log) == Breakdown(price(log, 0), event_price(log.events[-2]))


@BOTH
def test_metered_replacement_drops_the_system_prompts_it_shadows(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.system("old prompt")
    log.user("question")
    log.compact(0, 1, "summary")
    assert view_of(projection, log) == Breakdown(0, event_price(log.events[-2]))


@BOTH
def test_a_replacement_naming_another_range_than_the_claim_is_an_error(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.user("c")
    log.meter("compaction/summary", 0, 1)
    log.replace("user/message", "checkpoint", 1, 2)
    with pytest.raises(FoldError) as caught:
        fold(projection, log.events)
    assert (caught.value.seq, caught.value.event_type, caught.value.rule) == (
        4,
        "user/message",
        "claim-range-mismatch",
    )


def test_v6_system_message_in_place_of_a_metered_range_is_an_error() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("question")
    log.meter("compaction/summary", 0, 1)
    log.replace("system/message", "new prompt", 0, 1)
    with pytest.raises(FoldError, match="system-prompt-over-metered-range"):
        fold(V6, log.events)


@BOTH
@pytest.mark.parametrize("by_seq", [False, True])
def test_unmetered_system_prompt_rewrite_keeps_its_position(
    projection: Projection[Any, Breakdown], by_seq: bool
) -> None:
    log = LogBuilder()
    log.system("first")
    log.user("hi")
    log.system("second")
    log.replace("system/message", "the first prompt, rewritten at length", 0, 0, by_seq=by_seq)
    rewritten = log.events[-1].seq
    # The rewrite kept position 0, so the later prompt is still the last one and shows as system.
    assert view_of(projection, log) == Breakdown(price(log, 2), price(log, rewritten) + price(log, 1))


def test_v6_unmetered_system_prompt_rewrite_replaces_the_prompt_in_place() -> None:
    log = LogBuilder()
    log.system("first")
    log.system("second")
    log.replace("system/message", "first again", 0, 0)
    assert [prompt.seq for prompt in fold(V6, log.events).systems] == [2, 1]


@BOTH
def test_unmetered_replacement_of_a_system_prompt_by_a_message_removes_it(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.system("the only prompt")
    log.user("hi")
    log.replace("user/message", "a message where the prompt was", 0, 0)
    assert view_of(projection, log) == Breakdown(0, price(log, 1) + price(log, 2))
    if projection is V6:
        assert fold(V6, log.events).systems == ()


def test_v6_other_unmetered_replacement_folds_at_zero_delta() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a long question " * 30)
    log.replace("user/message", "short", 1, 1)
    assert view_of(V6, log) == Breakdown(price(log, 0), price(log, 1))


def test_v5_other_unmetered_replacement_is_exact() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a long question " * 30)
    log.replace("user/message", "short", 1, 1)
    assert view_of(V5, log) == Breakdown(price(log, 0), price(log, 2))


def test_v6_unmetered_range_replacement_inserting_a_system_prompt_is_an_error() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("question")
    log.replace("system/message", "merged prompt", 0, 1)
    with pytest.raises(FoldError, match="unmetered-system-insert"):
        fold(V6, log.events)


def test_v5_unmetered_range_replacement_by_a_system_prompt_is_exact() -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("question")
    log.replace("system/message", "merged prompt", 0, 1)
    assert view_of(V5, log) == Breakdown(price(log, 2), 0)


def test_v5_replacement_out_of_range_is_an_error() -> None:
    log = LogBuilder()
    log.user("a")
    log.event(
        "user/message", {"role": "user", "content": "b"}, surface_op={"op": "replace", "start": 0, "end": 3}
    )
    with pytest.raises(FoldError, match="replace-out-of-range"):
        fold(V5, log.events)


@BOTH
def test_views_are_floored_at_zero(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.user("a")
    log.compact(0, 0, "summary", tokens=10_000)
    assert projection.view(fold(projection, log.events)).message_tokens >= 0
    if projection is V6:
        assert fold(V6, log.events).total < 0
        assert view_of(V6, log) == Breakdown(0, 0)


def test_v6_system_tokens_skip_prompts_with_no_price() -> None:
    systems = (SystemPrompt(0, 30), SystemPrompt(5, 0))
    state = BreakdownV6State(total=50, systems=systems, claim=None)
    assert V6.view(state) == Breakdown(30, 20)


@BOTH
def test_a_v0_header_system_prompt_is_off_the_surface_and_not_counted(
    projection: Projection[Any, Breakdown],
) -> None:
    log = LogBuilder()
    log.header(system="You are a v0 agent.")
    log.user("hi")
    assert view_of(projection, log) == Breakdown(0, price(log, 1))


def test_breakdown_serializes_to_camel_case_json() -> None:
    assert Breakdown(3, 4, 5).to_json() == {"systemTokens": 3, "toolsTokens": 5, "messageTokens": 4}


@BOTH
def test_surface_only_versions_count_no_tool_schemas(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.header(tools=[{"name": "bash"}])
    log.user("hi")
    view = projection.view_json(view_of(projection, log))
    assert view == {"systemTokens": 0, "toolsTokens": 0, "messageTokens": price(log, 1)}


@BOTH
def test_state_survives_a_row_round_trip(projection: Projection[Any, Breakdown]) -> None:
    log = LogBuilder()
    log.system("prompt")
    log.user("a")
    log.meter("compaction/summary", 1, 1)
    state = fold(projection, log.events)
    row = to_row(projection, state, seq=log.events[-1].seq)
    log.replace("user/message", "checkpoint", 1, 1)
    log.user("b")
    resumed, last = resume(projection, row, log.events)
    assert last == log.events[-1].seq
    assert projection.view(resumed) == view_of(projection, log)


def test_applying_an_event_leaves_the_earlier_state_unchanged() -> None:
    log = LogBuilder()
    log.user("a")
    steps = list(fold_views(V5, log.events))
    first = steps[0].state
    log.user("b")
    fold(V5, log.events[1:], state=first)
    assert V5.view(first) == Breakdown(0, price(log, 0))
    assert len(first.entries) == 1


def test_v6_state_follows_system_prompts_not_messages() -> None:
    short, long = LogBuilder(), LogBuilder()
    for log, messages in ((short, 10), (long, 1_000)):
        log.system("prompt")
        for _ in range(messages):
            log.user("message")
    v6_sizes = [state_size_bytes(V6, fold(V6, log.events)) for log in (short, long)]
    v5_sizes = [state_size_bytes(V5, fold(V5, log.events)) for log in (short, long)]
    assert v6_sizes[0] == v6_sizes[1] - (len(str(long.surface_total())) - len(str(short.surface_total())))
    assert v5_sizes[1] > 50 * v5_sizes[0]


# --- property checks: versions 5 and 6 against each other -----------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["system", "user", "assistant", "tool", "compact", "prune", "rewrite", "noise"]),
        st.integers(0, 1_000),
        st.integers(0, 1_000),
        st.integers(0, 120),
        st.booleans(),
    ),
    max_size=40,
)


def exact_log(ops: list[tuple[str, int, int, int, bool]]) -> LogBuilder:
    """A log whose every replacement is metered exactly or rewrites one system prompt."""
    log = LogBuilder()
    for kind, a, b, length, by_seq in ops:
        text = "é😀x" * length
        size = len(log.nodes)
        if kind == "system":
            log.system(text)
        elif kind == "user":
            log.user(text)
        elif kind == "assistant":
            log.assistant(text)
        elif kind == "tool":
            log.tool_result(text)
        elif kind == "noise":
            log.event("turn/start", {"turn": a})
        elif kind == "compact" and size:
            start, end = sorted((a % size, b % size))
            log.compact(start, end, text, by_seq=by_seq)
        elif kind == "prune" and size:
            log.prune(a % size, text, by_seq=by_seq)
        elif kind == "rewrite":
            systems = [i for i, node in enumerate(log.nodes) if node.system]
            if systems:
                position = systems[a % len(systems)]
                log.replace(
                    "system/message" if b % 2 else "user/message", text, position, position, by_seq=by_seq
                )
    return log


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_v5_and_v6_agree_after_every_event_when_replacements_are_metered_exactly(
    ops: list[tuple[str, int, int, int, bool]],
) -> None:
    log = exact_log(ops)
    for v5_step, v6_step in zip(fold_views(V5, log.events), fold_views(V6, log.events), strict=True):
        assert v5_step.view == v6_step.view, f"diverged at seq {v5_step.seq}"


@settings(max_examples=300, deadline=None)
@given(OPS, st.integers(0, 1_000), st.integers(0, 1_000), st.integers(0, 200), st.booleans(), OPS)
def test_v6_differs_by_the_price_difference_of_an_unmetered_message_replacement(
    before: list[tuple[str, int, int, int, bool]],
    a: int,
    b: int,
    length: int,
    by_seq: bool,
    after: list[tuple[str, int, int, int, bool]],
) -> None:
    log = exact_log(before)
    log.user("never a system prompt")
    messages = [i for i, node in enumerate(log.nodes) if not node.system]
    start, end = sorted((messages[a % len(messages)], messages[b % len(messages)]))
    if any(node.system for node in log.nodes[start : end + 1]):
        start = end
    old = sum(node.tokens for node in log.nodes[start : end + 1])
    replacement = log.replace("user/message", "x" * length, start, end, by_seq=by_seq)
    difference = event_price(replacement) - old
    for kind, _, _, tail_length, _ in after:
        if kind in ("user", "assistant", "tool"):  # a tail of appends keeps the difference as it is
            log.user("y" * tail_length)
        elif kind == "system":
            log.system("y" * tail_length)
    v5 = list(fold_views(V5, log.events))
    v6 = list(fold_views(V6, log.events))
    for v5_step, v6_step in zip(v5, v6, strict=True):
        if v5_step.seq < replacement.seq:
            assert v5_step.view == v6_step.view
        else:
            assert v5_step.view.system_tokens == v6_step.view.system_tokens
            assert v5_step.view.message_tokens - v6_step.view.message_tokens == difference
