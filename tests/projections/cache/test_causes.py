from __future__ import annotations

import copy
from typing import Any

import pytest

from projections.cache.explain.causes import REMEDIES, Cause, classify_change, smallest_span, unit_text
from projections.cache.render.diff import first_change, shared_prefix_length
from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import body, conversation, tools


def classify(prev_body: dict[str, Any], cur_body: dict[str, Any]) -> Cause:
    prev = render_request("anthropic", "messages", prev_body)
    cur = render_request("anthropic", "messages", cur_body)
    change = first_change(prev, cur, shared_prefix_length(prev, cur))
    assert change is not None
    return classify_change(prev, cur, change)


def test_every_cause_has_a_one_sentence_remedy() -> None:
    for label, remedy in REMEDIES.items():
        assert remedy.endswith("."), label
        assert len(remedy) < 300, label


def test_parameter_changes_name_the_parameter() -> None:
    history = conversation(4)
    thinking = dict(body(history), thinking={"type": "enabled", "budget_tokens": 1024})
    cause = classify(body(history), thinking)
    assert cause.label == "params-changed"
    assert cause.detail == "changed: thinking"


def test_tools_removed_reordered_and_edited_are_told_apart() -> None:
    history = conversation(2)
    base = body(history, tool_defs=tools("A", "B", "C"))
    assert classify(base, body(history, tool_defs=tools("A", "C"))).detail == "removed B"
    assert classify(base, body(history, tool_defs=tools("C", "A", "B"))).detail == "reordered"
    edited = tools("A", "B", "C")
    edited[1]["description"] = "new words"
    assert classify(base, body(history, tool_defs=edited)).detail == "edited B"


def test_a_system_edit_with_more_than_digits_is_not_timestamp_drift() -> None:
    history = conversation(2)
    cause = classify(
        body(history, system=[{"type": "text", "text": "You are helpful. Today is Monday."}]),
        body(history, system=[{"type": "text", "text": "You are helpful. Today is Tuesday."}]),
    )
    assert cause.label == "system-changed"
    assert cause.sublabel is None
    assert cause.remedy == REMEDIES["system-changed"]


def test_a_dropped_thinking_block_is_thinking_stripped() -> None:
    # Opus 4.5 and later keep every earlier thinking block, so a client that drops one changes the prefix.
    history = conversation(4)
    history[1]["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})
    stripped = copy.deepcopy(history)
    stripped[1]["content"].pop(0)
    opus = "claude-opus-4-6"
    assert classify(body(history, model=opus), body(stripped, model=opus)).label == "thinking-stripped"


def test_dropping_an_earlier_turns_thinking_changes_nothing_on_a_model_that_strips_it_itself() -> None:
    # Sonnet 4 keeps only the last assistant turn's thinking (extended-thinking guide).
    history = conversation(4)
    history[1]["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})
    stripped = copy.deepcopy(history)
    stripped[1]["content"].pop(0)
    prev = render_request("anthropic", "messages", body(history))
    cur = render_request("anthropic", "messages", body(stripped))
    assert prev.prefix_hashes == cur.prefix_hashes


def test_the_same_text_under_another_role_is_reserialized() -> None:
    history = conversation(4)
    moved = copy.deepcopy(history)
    moved[2]["role"] = "assistant"
    cause = classify(body(history), body(moved))
    assert cause.label == "reserialized"
    assert "role user → assistant" in cause.detail


def test_a_system_reminder_placed_inside_the_history_is_injected() -> None:
    history = conversation(8)
    injected = [
        *history[:4],
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}]},
        *history[4:],
    ]
    assert classify(body(history), body(injected)).label == "injected"


def test_a_plain_message_inserted_or_removed_inside_the_history() -> None:
    history = conversation(8)
    inserted = [*history[:4], {"role": "user", "content": [{"type": "text", "text": "extra"}]}, *history[4:]]
    assert classify(body(history), body(inserted)).label == "inserted"
    assert classify(body(history), body(history[:3] + history[4:])).label == "removed"


def test_a_block_of_another_kind_in_place_is_unknown() -> None:
    history = conversation(4)
    other = copy.deepcopy(history)
    other[2]["content"] = [{"type": "document", "source": {"type": "text", "data": "d"}}]
    assert classify(body(history), body(other)).label == "unknown"


def test_smallest_span_strips_the_common_prefix_and_suffix() -> None:
    span = smallest_span("at 10:00 today", "at 10:05 today")
    assert (span.start, span.old_end, span.new_end) == (7, 8, 8)


def test_unit_text_reads_blocks_results_and_inputs() -> None:
    assert (
        unit_text(
            {"type": "tool_result", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        )
        == "a\nb"
    )
    assert unit_text({"type": "tool_use", "input": {"k": 1}}) == '{"k": 1}'
    assert unit_text("plain") == "plain"


def one_block(history: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """``history`` with message ``index`` sent as a plain string rather than its one text block."""
    stringy = copy.deepcopy(history)
    stringy[index]["content"] = stringy[index]["content"][0]["text"]
    return stringy


@pytest.mark.parametrize("direction", ["string first", "block first"])
def test_the_same_text_switched_between_a_string_and_one_text_block_may_break_the_cache(
    direction: str,
) -> None:
    history = conversation(4)
    before, after = (
        (one_block(history, 2), history) if direction == "string first" else (history, one_block(history, 2))
    )
    cause = classify(body(before), body(after))
    assert (cause.label, cause.sublabel) == ("reserialized", "string-vs-block")
    assert cause.detail.startswith("messages:#2.0 is the same text, sent as a ")
    assert "may break the cache" in cause.detail
    assert cause.remedy == REMEDIES["string-vs-block"]
    assert "may break" in cause.remedy


def test_a_string_system_prompt_sent_as_one_text_block_is_the_same_switch() -> None:
    history = conversation(2)
    listed = body(history)
    stringy = dict(listed, system=listed["system"][0]["text"])
    cause = classify(stringy, listed)
    assert (cause.label, cause.sublabel) == ("reserialized", "string-vs-block")
    assert cause.detail.startswith("system:0 is the same text")


def test_a_string_that_became_one_of_several_blocks_is_not_a_form_switch() -> None:
    history = conversation(4)
    grown = copy.deepcopy(history)
    grown[2]["content"].append({"type": "text", "text": "and one more thing"})
    assert classify(body(one_block(history, 2)), body(grown)).sublabel != "string-vs-block"
    cited = copy.deepcopy(history)
    cited[2]["content"][0]["citations"] = [{"type": "char_location", "cited_text": "x"}]
    assert classify(body(one_block(history, 2)), body(cited)).sublabel != "string-vs-block"
