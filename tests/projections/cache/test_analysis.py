from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from projections.cache.analysis import RequestAnalysis, analyse_lineage
from projections.cache.predict.client_records import CreditRecord
from projections.normalized import RequestRecord, Usage
from tests.projections.cache.builders import (
    body,
    conversation,
    image_block,
    record,
    tools,
    words,
)


def pair(
    prev_body: dict[str, Any], cur_body: dict[str, Any], *, minutes: float = 1.0, **kw: Any
) -> RequestAnalysis:
    requests = [record("r0", 0, prev_body), record("r1", 1, cur_body, minutes=minutes)]
    return analyse_lineage(requests, **kw)[1]


def through_message(prev_body: dict[str, Any], message: int) -> int:
    """Prefix tokens of the previous request through the last block of ``message``."""
    rendered = analyse_lineage([record("r0", 0, prev_body)])[0].rendered
    assert rendered is not None
    last = max(i for i, m in enumerate(rendered.message_indexes) if m == message)
    return rendered.prefix_tokens(last)


def through_system(prev_body: dict[str, Any]) -> int:
    rendered = analyse_lineage([record("r0", 0, prev_body)])[0].rendered
    assert rendered is not None
    return rendered.prefix_tokens(rendered.tier_start("messages") - 1)


def with_images(turns: int, at: tuple[int, ...]) -> list[dict[str, Any]]:
    history = conversation(turns)
    for index in at:
        history[index]["content"].append(image_block(f"img{index}"))
    return history


@pytest.mark.parametrize(
    ("stripped", "statuses", "kept_through"),
    [
        (24, ["kept", "kept", "kept", "broken"], 20),  # recent part of the history
        (14, ["kept", "kept", "broken", "broken"], 10),  # middle
        (2, ["kept", "broken", "broken", "broken"], None),  # head: only the system prompt survives
    ],
)
def test_an_image_stripped_by_count_keeps_only_the_markers_before_it(
    stripped: int, statuses: list[str], kept_through: int | None
) -> None:
    history = with_images(30, (2, 14, 24))
    prev_body = body(history, marks=(10, 20, 29))
    new = copy.deepcopy(history)
    new[stripped]["content"][-1] = {"type": "text", "text": "[image removed]"}
    analysis = pair(prev_body, body([*new, *conversation(2)], marks=(10, 20, 31)))
    assert [m.status for m in analysis.markers] == statuses
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "image-stripped"
    assert "batches" in analysis.first_change.cause.remedy
    expected = (
        through_message(prev_body, kept_through) if kept_through is not None else through_system(prev_body)
    )
    assert analysis.figures.wire_allows == expected
    assert analysis.figures.predicted_read == expected
    assert analysis.label == f"prefix-changed@messages:{analysis.first_change.position}"


def tool_history(pairs: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": words("task", 400)}]}
    ]
    for i in range(pairs):
        history.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"i": i}}],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": words(f"out{i}", 800)}
                ],
            }
        )
    return history


def test_a_tool_result_replaced_by_keep_last_n_is_named_with_its_remedy() -> None:
    history = tool_history(10)
    prev_body = body(history, marks=(8, 20))
    new = copy.deepcopy(history)
    new[12]["content"][0]["content"] = "[Old tool result content cleared]"
    analysis = pair(prev_body, body(new, marks=(8, 20)))
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "tool-result-replaced"
    assert "batches" in analysis.first_change.cause.remedy
    assert [m.status for m in analysis.markers] == ["kept", "kept", "broken"]
    assert analysis.figures.wire_allows == through_message(prev_body, 8)


def test_an_edit_shows_the_smallest_differing_span() -> None:
    history = conversation(12)
    prev_body = body(history, marks=(11,))
    new = copy.deepcopy(history)
    new[6]["content"][0]["text"] = new[6]["content"][0]["text"].replace("dolor", "DOLOR", 1)
    analysis = pair(prev_body, body(new, marks=(11,)))
    cause = analysis.first_change.cause if analysis.first_change else None
    assert cause is not None
    assert cause.label == "edited"
    assert cause.span is not None
    old_text = history[6]["content"][0]["text"]
    assert old_text[cause.span.start : cause.span.old_end] == "dolor"
    assert analysis.first_change is not None
    assert analysis.first_change.byte_offset is not None


def test_a_change_of_raw_form_only_is_reserialized() -> None:
    history = conversation(12)
    history[4]["content"] = history[4]["content"][0]["text"]
    prev_body = body(history, marks=(11,))
    new = copy.deepcopy(history)
    new[4]["content"] = [{"type": "text", "text": new[4]["content"]}]
    analysis = pair(prev_body, body(new, marks=(11,)))
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "reserialized"
    assert analysis.first_change.cause.sublabel == "string-vs-block"
    # The bytes changed, so the bound stays the prefix before them; the marker is only maybe broken.
    assert analysis.figures.wire_allows == through_system(prev_body)
    broken = [m for m in analysis.markers if m.status == "broken"]
    assert broken
    assert all(m.why.startswith("maybe broken: ") for m in broken)


def test_a_provider_read_past_a_string_to_block_switch_is_named_as_evidence_that_it_kept_the_cache() -> None:
    history = conversation(12)
    history[4]["content"] = history[4]["content"][0]["text"]
    prev_body = body(history, marks=(11,))
    new = copy.deepcopy(history)
    new[4]["content"] = [{"type": "text", "text": new[4]["content"]}]
    new += [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    read_all = through_message(prev_body, 11)
    usage = Usage(10, read_all, 20, None, 5, "anthropic")
    requests = [record("r0", 0, prev_body), record("r1", 1, body(new, marks=(12,)), minutes=1, usage=usage)]
    analysis = analyse_lineage(requests)[1]
    [error] = [w for w in analysis.warnings if w.kind == "model-error"]
    assert "read past the string ↔ one-text-block switch at messages:#4.0" in error.message
    assert "did not break the cache" in error.message


def test_a_late_tool_result_moving_above_a_stub_is_reordered() -> None:
    history = tool_history(3)
    history.append(
        {"role": "assistant", "content": [{"type": "tool_use", "id": "late", "name": "Bash", "input": {}}]}
    )
    stub = {"type": "text", "text": "(result still running)"}
    result = {"type": "tool_result", "tool_use_id": "late", "content": words("late output", 300)}
    prev_body = body([*history, {"role": "user", "content": [stub, result]}], marks=(5,))
    cur_body = body([*history, {"role": "user", "content": [result, stub]}], marks=(5,))
    analysis = pair(prev_body, cur_body)
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "reordered"


def test_a_cut_by_a_lower_per_message_cap_is_truncated() -> None:
    history = conversation(10, chars=3000)
    prev_body = body(history, marks=(9,))
    new = copy.deepcopy(history)
    new[5]["content"][0]["text"] = new[5]["content"][0]["text"][:1000] + "… [truncated]"
    analysis = pair(prev_body, body(new, marks=(9,)))
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "truncated"


def test_a_summary_pair_rendered_under_another_label_is_an_edit_of_the_label() -> None:
    summary = words("summary of the earlier work", 2000)
    pair_a = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Summary of the conversation so far:\n" + summary}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Understood."}]},
    ]
    pair_b = copy.deepcopy(pair_a)
    pair_b[0]["content"][0]["text"] = "Previous conversation summary:\n" + summary
    tail = conversation(4)
    analysis = pair(body([*pair_a, *tail], marks=(5,)), body([*pair_b, *tail], marks=(5,)))
    cause = analysis.first_change.cause if analysis.first_change else None
    assert cause is not None
    assert cause.label == "edited"
    assert cause.span is not None
    assert cause.span.start == 0
    assert cause.span.new_end < 40


def test_a_control_where_nothing_changes_reads_everything_the_previous_request_wrote() -> None:
    history = conversation(20)
    prev_body = body(history, marks=(19,))
    analysis = pair(prev_body, body([*history, *conversation(2)], marks=(21,)))
    assert analysis.first_change is None
    assert [m.status for m in analysis.markers] == ["kept", "kept"]
    assert analysis.figures.wire_allows == through_message(prev_body, 19)
    assert analysis.figures.predicted_read == analysis.figures.wire_allows
    assert analysis.label is None
    assert not analysis.material
    assert analysis.warnings == ()


def test_over_credit_is_warned_when_the_client_counts_a_changed_prefix() -> None:
    history = conversation(20)
    prev_body = body(history, marks=(19,))
    new = copy.deepcopy(history)
    new[15]["content"][0]["text"] = "rewritten in place"
    credits = {"r1": CreditRecord("r1", through_message(prev_body, 19), (), "cache/credit")}
    analysis = pair(prev_body, body(new, marks=(19,)), credits=credits)
    assert [w.kind for w in analysis.warnings] == ["over-credit"]
    assert analysis.warnings[0].place == "messages:#15.0"
    assert analysis.figures.credited == credits["r1"].credited_tokens


@pytest.mark.parametrize(
    ("ttl", "minutes", "expired"), [(None, 6, True), (None, 4, False), ("1h", 61, True), ("1h", 50, False)]
)
def test_entries_expire_after_five_minutes_or_one_hour(
    ttl: str | None, minutes: float, expired: bool
) -> None:
    history = conversation(20)
    prev_body = body(history, marks=(19,), ttl=ttl)
    analysis = pair(prev_body, body([*history, *conversation(2)], marks=(21,), ttl=ttl), minutes=minutes)
    statuses = {m.status for m in analysis.markers}
    if expired:
        assert statuses == {"expired"}
        assert analysis.label == "ttl-expired"
        assert analysis.figures.predicted_read == 0
        assert analysis.figures.wire_allows == 0
    else:
        assert statuses == {"kept"}
        assert analysis.figures.predicted_read == through_message(prev_body, 19)


def test_a_breakpoint_beyond_the_lookback_window_cannot_be_read() -> None:
    history = conversation(10)
    prev_body = body(history, marks=(9,))
    analysis = pair(prev_body, body([*history, *conversation(30)], marks=(39,)))
    assert [m.status for m in analysis.markers] == ["kept", "out-of-reach"]
    assert analysis.label == "beyond-lookback"
    assert analysis.figures.predicted_read == through_system(prev_body)
    assert analysis.figures.wire_allows == through_system(prev_body)


def test_concurrent_requests_both_write() -> None:
    history = conversation(20)
    main = record("a", 0, body(history, marks=(19,)), first_token_after=5.0)
    side = record("b", 1, body(history, marks=(19,)), minutes=1 / 60, lineage="subagent")
    a, b = analyse_lineage([main, side])
    assert b.figures.predicted_read == 0
    assert b.figures.predicted_write == a.figures.predicted_write
    assert b.label == "concurrent"


def test_below_the_minimum_nothing_is_written_or_read() -> None:
    tiny = {
        "model": "claude-3-5-haiku-20241022",
        "system": [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hello"}],
    }
    first, second = analyse_lineage([record("a", 0, tiny), record("b", 1, tiny, minutes=1)])
    for analysis in (first, second):
        assert (analysis.figures.predicted_read, analysis.figures.predicted_write) == (0, 0)
        assert analysis.label == "below-minimum"
    assert [m.status for m in second.markers] == ["below-minimum"]


def test_a_tool_added_invalidates_everything_and_names_the_tool() -> None:
    history = conversation(10)
    analysis = pair(
        body(history, marks=(9,)), body(history, marks=(9,), tool_defs=tools("Bash", "Read", "Grep"))
    )
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "tools-changed"
    assert "added Grep" in analysis.first_change.cause.detail
    assert {m.status for m in analysis.markers} == {"broken"}
    assert analysis.figures.wire_allows == 0


def test_a_system_prompt_that_changes_every_turn_is_timestamp_drift() -> None:
    def system(stamp: str) -> list[dict[str, Any]]:
        return [
            {"type": "text", "text": words("static rules", 8000)},
            {"type": "text", "text": f"Current time: {stamp}", "cache_control": {"type": "ephemeral"}},
        ]

    history = conversation(10)
    analysis = pair(
        body(history, marks=(9,), system=system("2025-06-01 12:00:00")),
        body(history, marks=(9,), system=system("2025-06-01 12:01:00")),
    )
    cause = analysis.first_change.cause if analysis.first_change else None
    assert cause is not None
    assert cause.label == "system-changed"
    assert cause.sublabel == "timestamp-drift"
    assert "user message after the history" in cause.remedy
    assert analysis.label == "no-write-at-reusable-position"
    assert analysis.cacheability["messages"].shared == 0


def test_a_model_switch_is_named_before_anything_else() -> None:
    history = conversation(10)
    analysis = pair(body(history, marks=(9,)), body(history, marks=(9,), model="claude-opus-4-1-20250805"))
    assert analysis.first_change is not None
    assert analysis.first_change.cause.label == "model-changed"
    assert analysis.label == "model-changed"
    assert analysis.figures.predicted_read == 0


def test_requests_without_a_body_keep_their_reported_figures() -> None:
    request = record("a", 0, body(conversation(2)))
    bare = RequestRecord(**{**{f: getattr(request, f) for f in request.__slots__}, "body": None})
    (analysis,) = analyse_lineage([bare])
    assert analysis.figures.predicted_read is None
    assert analysis.markers == ()


def test_to_json_has_exactly_the_documented_shape() -> None:
    history = conversation(10)
    changed = [*history[:9], {"role": "assistant", "content": [{"type": "text", "text": "changed"}]}]
    result = analyse_lineage(
        [record("a", 0, body(history, marks=(9,))), record("b", 1, body(changed, marks=(9,)), minutes=1)]
    )
    data = json.loads(json.dumps(result.to_json()))
    assert set(data[1]) == {"ordinal", "lineage", "model", "markers", "first_change", "figures", "label"}
    assert set(data[1]["markers"][0]) == {"ordinal", "position", "tier", "prefix_tokens", "status"}
    assert set(data[1]["first_change"]) == {"position", "tier", "cause"}
    assert set(data[1]["figures"]) == {
        "credited",
        "wire_allows",
        "reported_read",
        "reported_write",
        "predicted_read",
        "predicted_write",
    }
    assert data[0]["first_change"] is None
    assert data[0]["figures"]["wire_allows"] is None
    assert data[1]["first_change"] == {"position": 12, "tier": "messages", "cause": "edited"}


def test_a_lineages_first_request_is_not_over_credited_for_a_prefix_another_lineage_wrote() -> None:
    history = conversation(20)
    main_body = body(history, marks=(19,))
    side = record("s0", 1, body([*history, *conversation(2)], marks=(21,)), minutes=1.0, lineage="subagent")
    credited = through_message(main_body, 19)
    credits = {"s0": CreditRecord("s0", credited, (), "cache/credit")}
    first_of_subagent = analyse_lineage([record("r0", 0, main_body), side], credits=credits)[1]
    assert first_of_subagent.figures.wire_allows is None
    assert first_of_subagent.figures.predicted_read == credited
    assert first_of_subagent.warnings == ()


def test_a_lineages_first_request_credited_beyond_any_stored_entry_is_over_credit() -> None:
    credits = {"r0": CreditRecord("r0", 5_000, (), "cache/credit")}
    (first,) = analyse_lineage([record("r0", 0, body(conversation(20), marks=(19,)))], credits=credits)
    assert [w.kind for w in first.warnings] == ["over-credit"]


def test_a_request_rendered_by_the_caller_is_analysed_as_given_not_rendered_again() -> None:
    requests = [record("r0", 0, body(conversation(4))), record("r1", 1, body(conversation(6)), minutes=1)]
    plain = analyse_lineage(requests)
    given = {"r1": plain[1].rendered}
    reused = analyse_lineage(requests, renderings=given)
    assert reused[1].rendered is given["r1"]
    assert reused[0].rendered is not plain[0].rendered  # rendered here, as nothing was given for it
    assert reused.to_json() == plain.to_json()
