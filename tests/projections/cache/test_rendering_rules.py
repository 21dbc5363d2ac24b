"""The render rules Anthropic documents, each tested on the documentation's own example shape."""

from __future__ import annotations

from typing import Any

from projections.cache.render.rendering import last_cacheable, render_request
from tests.projections.cache.builders import body, conversation, image_block, words


def render(request: dict[str, Any]) -> Any:
    return render_request("anthropic", "messages", request)


def parallel_turn(calls: int) -> list[dict[str, Any]]:
    """One assistant message with ``calls`` parallel tool calls and the user message answering them."""
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"path": f"/f{i}"}} for i in range(calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": words(f"file {i}", 80)}
        for i in range(calls)
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def test_a_run_of_parallel_tool_calls_and_of_their_results_is_one_lookback_position_each() -> None:
    # Prompt-caching guide, lookback: "a run of consecutive tool_use blocks counts as one position,
    # and so does a run of consecutive tool_result blocks"; the breakpoint itself is the first.
    messages = [*conversation(1), *parallel_turn(15)]
    rendered = render(body(messages))
    start = rendered.tier_start("messages")
    groups = rendered.lookback_groups[start:]
    assert len(groups) == 31
    assert groups[-1] - groups[0] == 2  # the first message, the tool_use run, the tool_result run


def test_blocks_other_than_tool_runs_count_one_position_each() -> None:
    rendered = render(body(conversation(6)))
    start = rendered.tier_start("messages")
    assert rendered.lookback_groups[start:] == list(
        range(rendered.lookback_groups[start], rendered.lookback_groups[start] + 6)
    )


def test_an_image_inside_a_tool_result_counts_as_an_image_present() -> None:
    # Claude Code returns screenshots as image blocks inside a tool_result's content.
    messages = [*conversation(1), *parallel_turn(1)]
    with_screenshot = [*conversation(1), *parallel_turn(1)]
    with_screenshot[-1]["content"][0]["content"] = [{"type": "text", "text": "shot"}, image_block("s")]
    plain, shot = render(body(messages)), render(body(with_screenshot))
    assert "images" not in plain.params
    assert shot.params["images"] is True
    start = plain.tier_start("messages")
    assert plain.prefix_hashes[:start] == shot.prefix_hashes[:start]  # tools and system survive
    assert plain.prefix_hashes[start] != shot.prefix_hashes[start]  # the messages are re-keyed


def test_the_automatic_breakpoint_lands_on_the_last_cacheable_block_never_a_thinking_block() -> None:
    messages = conversation(2)
    messages[-1]["content"] = [
        {"type": "text", "text": "answer"},
        {"type": "thinking", "thinking": "…", "signature": "s"},
    ]
    request = body(messages)
    request["cache_control"] = {"type": "ephemeral"}
    rendered = render(request)
    (automatic,) = [m for m in rendered.markers if m.automatic]
    assert rendered.kinds[-1] == "thinking"
    assert automatic.position == len(rendered) - 2
    assert rendered.kinds[automatic.position] == "text"


def test_an_empty_text_block_cannot_carry_the_automatic_breakpoint_either() -> None:
    assert (
        last_cacheable([{"type": "text", "text": "a"}, {"type": "text", "text": ""}], ["text", "text"]) == 0
    )
    assert last_cacheable([{"type": "thinking"}], ["thinking"]) is None


def thinking_loop(model: str) -> tuple[Any, Any]:
    """A tool loop with thinking, then the same history after the user's next message."""
    turn = [
        {"role": "user", "content": [{"type": "text", "text": words("task", 400)}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": words("plan", 400), "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "/a"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
    ]
    later = [
        *turn,
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "next"},
    ]
    return render(body(turn, model=model)), render(body(later, model=model))


def test_a_model_that_keeps_only_the_last_turn_drops_earlier_thinking_from_the_prefix() -> None:
    # Extended-thinking guide: Sonnet 4.5 and earlier keep only the last assistant turn's thinking.
    in_loop, next_turn = thinking_loop("claude-sonnet-4-5-20250929")
    assert "thinking" in in_loop.kinds  # the current tool loop keeps its thinking
    assert "thinking" not in next_turn.kinds  # a new user turn strips it
    thinking_at = in_loop.kinds.index("thinking")
    assert in_loop.prefix_hashes[:thinking_at] == next_turn.prefix_hashes[:thinking_at]
    assert in_loop.prefix_hashes[thinking_at] != next_turn.prefix_hashes[thinking_at]


def test_a_model_that_keeps_all_thinking_keeps_the_prefix_across_turns() -> None:
    # Opus 4.5 and later keep all prior thinking blocks.
    in_loop, next_turn = thinking_loop("claude-opus-4-6")
    assert next_turn.kinds.count("thinking") == 1
    assert in_loop.prefix_hashes == next_turn.prefix_hashes[: len(in_loop)]


def test_fast_mode_re_keys_the_system_and_messages_but_keeps_the_tools() -> None:
    plain = body(conversation(2))
    fast = dict(plain, speed="fast")
    a, b = render(plain), render(fast)
    system = a.tier_start("system")
    assert b.params["speed"] == "fast"
    assert a.prefix_hashes[:system] == b.prefix_hashes[:system]
    assert a.prefix_hashes[system] != b.prefix_hashes[system]


def test_an_output_format_re_keys_the_whole_prompt() -> None:
    plain = body(conversation(2))
    shaped = dict(plain, output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}})
    a, b = render(plain), render(shaped)
    assert a.header_hash != b.header_hash
    assert a.prefix_hashes[0] != b.prefix_hashes[0]


def test_an_effort_equal_to_the_model_default_keys_like_no_effort() -> None:
    plain = body(conversation(2), model="claude-opus-4-6")
    default = dict(plain, output_config={"effort": "high"})
    lower = dict(plain, output_config={"effort": "low"})
    a, b, c = render(plain), render(default), render(lower)
    assert a.prefix_hashes == b.prefix_hashes
    assert a.prefix_hashes[-1] != c.prefix_hashes[-1]
