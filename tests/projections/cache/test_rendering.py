from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.cache.render.canonical import block_hash, canonical_text
from projections.cache.render.rendering import RenderError, render_request
from projections.normalized import Usage
from tests.projections.cache.builders import body, conversation, image_block, tools

json_text = st.text(max_size=40)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, json_text),
    st.builds(
        lambda t, i: {"type": "tool_use", "id": i, "name": "Bash", "input": {"cmd": t}}, json_text, json_text
    ),
    st.builds(lambda t: {"type": "tool_result", "tool_use_id": "x", "content": t}, json_text),
)
messages = st.lists(
    st.builds(
        lambda role, content: {"role": role, "content": content},
        st.sampled_from(["user", "assistant"]),
        st.one_of(json_text, st.lists(blocks, min_size=1, max_size=3)),
    ),
    min_size=1,
    max_size=8,
)


def render(request: dict[str, Any], usage: Usage | None = None) -> Any:
    return render_request("anthropic", "messages", request, usage=usage)


def test_units_follow_the_prefix_order_tools_system_messages() -> None:
    rendered = render(body(conversation(3)))
    assert rendered.tiers == ["tools", "tools", "system", "messages", "messages", "messages"]
    assert rendered.identity(0) == "tools:Bash"
    assert rendered.identity(2) == "system:0"
    assert rendered.identity(4) == "messages:#1.0"
    assert rendered.roles[3:] == ["user", "assistant", "user"]


def test_a_string_system_prompt_and_a_string_content_are_one_unit_each() -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}],
    }
    rendered = render(request)
    assert rendered.kinds == ["system", "text"]
    assert rendered.canonicals == [b'"be brief"', b'"hi"']


def test_canonical_bytes_sort_keys_drop_whitespace_and_keep_utf8() -> None:
    text = canonical_text({"type": "tool_use", "name": "é", "input": {"b": 1, "a": [1, 2]}, "id": "t"})
    assert text == '{"id":"t","input":{"a":[1,2],"b":1},"name":"é","type":"tool_use"}'
    assert canonical_text({"type": "text", "text": "x\n"}) == json.dumps(
        {"text": "x\n", "type": "text"}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def test_markers_carry_their_ttl_and_a_top_level_control_adds_the_automatic_breakpoint() -> None:
    request = body(conversation(4), marks=(1,), ttl="1h")
    request["cache_control"] = {"type": "ephemeral"}
    rendered = render(request)
    assert [(m.position, m.ttl, m.automatic) for m in rendered.markers] == [
        (2, "1h", False),
        (4, "1h", False),
        (6, "5m", True),
    ]


def test_more_than_four_markers_is_a_warning_not_an_error() -> None:
    rendered = render(body(conversation(6), marks=(0, 1, 2, 3)))
    assert len(rendered.markers) == 5
    assert rendered.warnings == ("marker-limit: 5 cache breakpoints, the provider accepts 4",)


def test_images_and_thinking_re_key_the_messages_but_keep_tools_and_system() -> None:
    plain = body(conversation(2))
    with_image = body(conversation(2))
    with_image["messages"][0]["content"].append(image_block("a"))
    thinking = dict(plain, thinking={"type": "enabled", "budget_tokens": 2000})
    base, img, think = render(plain), render(with_image), render(thinking)
    assert img.params["images"] is True
    assert think.params["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    messages_start = base.tier_start("messages")
    assert base.prefix_hashes[:messages_start] == img.prefix_hashes[:messages_start]
    assert base.prefix_hashes[:messages_start] == think.prefix_hashes[:messages_start]
    assert base.prefix_hashes[messages_start] != think.prefix_hashes[messages_start]
    assert base.header_hash == img.header_hash == think.header_hash
    assert base.block_hashes[0] == img.block_hashes[0] == think.block_hashes[0]


def test_a_web_search_toggle_re_keys_the_system_tier_and_what_follows() -> None:
    plain = body(conversation(2))
    searching = dict(plain, tools=[*plain["tools"], {"type": "web_search_20250305", "name": "web_search"}])
    base, search = render(plain), render(searching)
    assert search.params["web_search"] is True
    system_start = base.tier_start("system")
    assert base.prefix_hashes[: system_start - 1] == search.prefix_hashes[: system_start - 1]
    assert (
        base.prefix_hashes[search.tier_start("system") :]
        != search.prefix_hashes[search.tier_start("system") :]
    )


def test_other_providers_key_every_prefix_on_their_parameters() -> None:
    chat = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    keyed = dict(chat, prompt_cache_key="tenant-1")
    a = render_request("openai", "chat", chat)
    b = render_request("openai", "chat", keyed)
    assert a.header_hash != b.header_hash
    assert a.prefix_hashes[0] != b.prefix_hashes[0]


def test_a_role_change_changes_the_prefix_hash_but_not_the_block_hash() -> None:
    a = render({"model": "claude-sonnet-4", "messages": [{"role": "user", "content": "same"}]})
    b = render({"model": "claude-sonnet-4", "messages": [{"role": "assistant", "content": "same"}]})
    assert a.block_hashes == b.block_hashes
    assert a.prefix_hashes != b.prefix_hashes


def test_tokens_are_calibrated_to_the_reported_total_and_anchored_at_the_last_breakpoint() -> None:
    rendered = render(body(conversation(4), marks=(2,)), Usage(50, 3000, 1000, 0, 5, "anthropic"))
    last = max(m.position for m in rendered.markers)
    assert rendered.prefix_tokens(last) == 4000
    assert rendered.total_tokens == 4050
    assert sum(rendered.tokens) + rendered.unattributed_tokens == 4050


def test_without_usage_tokens_are_characters_over_four() -> None:
    rendered = render({"model": "claude-sonnet-4", "messages": [{"role": "user", "content": "x" * 398}]})
    assert rendered.tokens == [100]  # 400 characters with the quotes


def test_chat_completions_render_leading_system_messages_as_the_system_tier() -> None:
    request = {
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "function": {"name": "lookup"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
            {"role": "system", "content": "late"},
        ],
    }
    rendered = render_request("openai", "chat", request)
    assert rendered.tiers == ["tools", "system", "messages", "messages", "messages", "messages"]
    assert rendered.kinds == ["tool", "text", "text", "tool_use", "tool_result", "text"]
    assert rendered.identity(0) == "tools:lookup"


def test_responses_render_instructions_items_and_function_calls() -> None:
    request = {
        "model": "gpt-5",
        "instructions": "be terse",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
            {"type": "reasoning", "id": "r1", "summary": []},
        ],
    }
    rendered = render_request("openai", "responses", request)
    assert rendered.tiers == ["system", "messages", "messages", "messages", "messages"]
    assert rendered.kinds == ["system", "text", "tool_use", "tool_result", "thinking"]
    assert rendered.identity(4) == "messages:r1.0"


def test_a_body_without_a_model_or_messages_is_refused_naming_the_field() -> None:
    with pytest.raises(RenderError, match="'model'"):
        render({"messages": []})
    with pytest.raises(RenderError, match="'messages'"):
        render({"model": "claude-sonnet-4"})
    with pytest.raises(RenderError, match=r"messages\[0\].content"):
        render({"model": "claude-sonnet-4", "messages": [{"role": "user", "content": 3}]})
    with pytest.raises(RenderError, match="unknown api"):
        render_request("anthropic", "completions", {"model": "m"})


def test_a_message_that_is_not_an_object_is_refused_naming_its_place() -> None:
    messages: list[Any] = [{"role": "user", "content": "hi"}, "not an object"]
    with pytest.raises(RenderError, match=r"messages\[1\] is not an object"):
        render({"model": "claude-sonnet-4", "messages": messages})
    with pytest.raises(RenderError, match=r"input\[0\] is not an object"):
        render_request("openai", "responses", {"model": "gpt-5", "input": [3]})


def test_blocks_give_one_content_addressed_record_per_unit() -> None:
    rendered = render(body(conversation(2)))
    blocks = rendered.blocks()
    assert [b.hash for b in blocks] == rendered.block_hashes
    assert blocks[0].canonical == canonical_text(tools("Bash")[0]).encode()
    assert blocks[-1].chars == len(blocks[-1].canonical.decode())


@given(messages)
def test_equal_content_gives_equal_hashes(msgs: list[dict[str, Any]]) -> None:
    a = render({"model": "claude-sonnet-4", "messages": msgs})
    b = render(json.loads(json.dumps({"model": "claude-sonnet-4", "messages": msgs})))
    assert a.block_hashes == b.block_hashes
    assert a.prefix_hashes == b.prefix_hashes


@given(messages, st.sampled_from(["5m", "1h"]))
def test_cache_control_never_changes_a_hash(msgs: list[dict[str, Any]], ttl: str) -> None:
    marked = json.loads(json.dumps(msgs))
    for message in marked:
        if isinstance(message["content"], list):
            for block in message["content"]:
                block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    a = render({"model": "claude-sonnet-4", "messages": msgs})
    b = render({"model": "claude-sonnet-4", "messages": marked})
    assert a.block_hashes == b.block_hashes
    assert a.prefix_hashes == b.prefix_hashes


@given(messages, st.integers(min_value=1, max_value=8))
def test_the_prefix_hashes_of_a_prefix_are_a_prefix_of_the_list(msgs: list[dict[str, Any]], cut: int) -> None:
    whole = render({"model": "claude-sonnet-4", "messages": msgs})
    part = render({"model": "claude-sonnet-4", "messages": msgs[:cut]})
    assert whole.prefix_hashes[: len(part)] == part.prefix_hashes


@given(json_text, json_text)
def test_different_text_gives_different_block_hashes(a: str, b: str) -> None:
    assert (block_hash(a) == block_hash(b)) == (a == b)
