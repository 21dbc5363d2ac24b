from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from projections.cache.explain.causes import classify_change
from projections.cache.render.diff import diff_requests, first_changed_byte, shared_prefix_length
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import body, conversation, image_block


def render(request: dict[str, Any]) -> RenderedRequest:
    return render_request("anthropic", "messages", request)


def position_of(rendered: RenderedRequest, message: int) -> int:
    return rendered.message_indexes.index(message)


def test_an_appended_turn_changes_nothing_and_keeps_every_marker() -> None:
    history = conversation(20)
    prev = render(body(history, marks=(9, 19)))
    cur = render(body([*history, *conversation(2)], marks=(9, 21)))
    diff = diff_requests(prev, cur, minimum=1024)
    assert diff.first_change is None
    assert [s.status for s in diff.markers] == ["kept", "kept", "kept"]
    assert diff.wire_allows == prev.prefix_tokens(position_of(prev, 19))


def test_an_edit_breaks_the_markers_after_it_and_names_the_first_changed_byte() -> None:
    history = conversation(20)
    prev = render(body(history, marks=(9, 19)))
    edited = copy.deepcopy(history)
    edited[14]["content"][0]["text"] = (
        edited[14]["content"][0]["text"][:100] + "X" + edited[14]["content"][0]["text"][101:]
    )
    cur = render(body([*edited, *conversation(2)], marks=(9, 21)))
    diff = diff_requests(prev, cur, minimum=1024)
    assert diff.first_change is not None
    assert diff.first_change.position == position_of(cur, 14)
    assert diff.first_change.identity == "messages:#14.0"
    assert diff.first_change.byte_offset == len(b'{"text":"') + 100
    assert [s.status for s in diff.markers] == ["kept", "kept", "broken"]
    assert diff.wire_allows == prev.prefix_tokens(position_of(prev, 9))


def test_the_shared_prefix_is_found_from_hashes_in_logarithmic_probes() -> None:
    history = conversation(200, chars=50)
    prev = render(body(history))
    changed = copy.deepcopy(history)
    changed[150]["content"][0]["text"] = "different"
    cur = render(body(changed))
    assert shared_prefix_length(prev, cur) == position_of(cur, 150)
    assert shared_prefix_length(prev, prev) == len(prev)


def test_first_changed_byte_is_exact_and_none_for_equal_bytes() -> None:
    assert first_changed_byte(b"abcdef", b"abcXef") == 3
    assert first_changed_byte(b"abc", b"abcd") == 3
    assert first_changed_byte(b"abc", b"abc") is None


def test_markers_below_the_minimum_were_never_written() -> None:
    prev = render(
        body(conversation(2, chars=40), marks=(1,), system=[{"type": "text", "text": "hi"}], tool_defs=[])
    )
    cur = render(
        body(conversation(4, chars=40), marks=(3,), system=[{"type": "text", "text": "hi"}], tool_defs=[])
    )
    diff = diff_requests(prev, cur, minimum=1024)
    assert [s.status for s in diff.markers] == ["below-minimum"]
    assert diff.wire_allows == 0


def test_markers_expire_after_their_ttl_when_no_cache_state_is_given() -> None:
    history = conversation(10)
    prev = render(body(history, marks=(9,)))
    cur = render(body([*history, *conversation(2)], marks=(11,)))
    late = diff_requests(prev, cur, minimum=1024, elapsed=timedelta(minutes=6))
    soon = diff_requests(prev, cur, minimum=1024, elapsed=timedelta(minutes=4))
    assert {s.status for s in late.markers} == {"expired"}
    assert late.wire_allows == 0
    assert {s.status for s in soon.markers} == {"kept"}


def test_a_marker_more_than_twenty_positions_behind_every_breakpoint_is_out_of_reach() -> None:
    history = conversation(10)
    prev = render(body(history, marks=(9,)))
    cur = render(body([*history, *conversation(30)], marks=(39,)))
    diff = diff_requests(prev, cur, minimum=1024, lookback=20)
    assert [s.status for s in diff.markers] == ["kept", "out-of-reach"]  # the system marker is re-sent


def test_runs_of_tool_use_blocks_count_as_one_lookback_position() -> None:
    calls = [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"n": i}} for i in range(30)]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"} for i in range(30)]
    history = conversation(1)
    prev = render(body(history, marks=(0,)))
    grown = [*history, {"role": "assistant", "content": calls}, {"role": "user", "content": results}]
    cur = render(body(grown, marks=(2,)))
    diff = diff_requests(prev, cur, minimum=1024, lookback=20)
    assert [s.status for s in diff.markers] == ["kept", "kept"]


def test_cacheability_splits_each_tier_at_the_first_change() -> None:
    history = conversation(6)
    prev = render(body(history, marks=(5,)))
    changed = copy.deepcopy(history)
    changed[3]["content"][0]["text"] = "new"
    cur = render(body(changed, marks=(5,)))
    shares = diff_requests(prev, cur).cacheability
    assert shares["tools"].rest == 0
    assert shares["system"].rest == 0
    assert (
        shares["messages"].shared
        == cur.cum_tokens[position_of(cur, 3)] - cur.cum_tokens[cur.tier_start("messages")]
    )
    assert (
        shares["messages"].shared + shares["messages"].rest
        == cur.cum_tokens[-1] - cur.cum_tokens[cur.tier_start("messages")]
    )


def test_a_model_switch_breaks_every_marker_even_with_identical_content() -> None:
    history = conversation(6)
    prev = render(body(history, marks=(5,)))
    cur = render(body(history, marks=(5,), model="claude-opus-4-1-20250805"))
    diff = diff_requests(prev, cur, minimum=1024)
    assert diff.first_change is not None
    assert diff.first_change.header_changed
    assert diff.first_change.position == 0
    assert {s.status for s in diff.markers} == {"broken"}


def test_stripping_the_last_image_keeps_tools_and_system_and_breaks_every_message_marker() -> None:
    history = conversation(12)
    history[8]["content"].append(image_block("screenshot"))
    prev = render(body(history, marks=(5, 11)))
    stripped = copy.deepcopy(history)
    stripped[8]["content"][1] = {"type": "text", "text": "[image removed]"}
    cur = render(body([*stripped, *conversation(2)], marks=(5, 13)))
    diff = diff_requests(prev, cur, minimum=1024)
    assert diff.first_change is not None
    assert diff.first_change.position == cur.tier_start("messages")
    system_marker, *message_markers = diff.markers
    assert system_marker.status == "kept"
    assert [m.status for m in message_markers] == ["broken", "broken"]
    assert diff.wire_allows == prev.prefix_tokens(prev.tier_start("messages") - 1)
    assert classify_change(prev, cur, diff.first_change).label == "image-stripped"
