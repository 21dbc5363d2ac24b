from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.normalized import EventRecord
from projections.prices import (
    PriceError,
    block_price,
    event_price,
    header_system_tokens,
    header_tools_tokens,
    js_json_stringify,
    message_price,
    utf16_len,
)


def event(kind: str, data: Mapping[str, object], seq: int = 0) -> EventRecord:
    return EventRecord(seq=seq, type=kind, time=None, data=data, surface_op="append")


def test_utf16_len_counts_ascii_as_one_unit_per_character() -> None:
    assert utf16_len("hello") == 5


def test_utf16_len_counts_astral_characters_as_two_units() -> None:
    assert utf16_len("a😀b") == 4
    assert utf16_len("𝄞") == 2


def test_utf16_len_counts_bmp_characters_as_one_unit() -> None:
    assert utf16_len("héllo — ü") == 9


def test_utf16_len_counts_a_lone_surrogate_as_one_unit() -> None:
    assert utf16_len(json.loads('"\\ud800x"')) == 2


@given(st.text())
def test_utf16_len_matches_the_utf16_encoding(s: str) -> None:
    assert utf16_len(s) == len(s.encode("utf-16-le", "surrogatepass")) // 2


def test_text_block_costs_a_quarter_of_its_length_rounded_up_plus_four() -> None:
    assert block_price({"type": "text", "text": ""}) == 4
    assert block_price({"type": "text", "text": "abcd"}) == 5
    assert block_price({"type": "text", "text": "abcde"}) == 6


def test_reasoning_block_is_priced_like_text() -> None:
    assert block_price({"type": "reasoning", "text": "x" * 9}) == 3 + 4


def test_astral_characters_raise_the_price_of_text() -> None:
    # Four emoji are eight UTF-16 units: two tokens, where code points would give one.
    assert block_price({"type": "text", "text": "😀" * 4}) == 2 + 4


def test_tool_call_block_prices_name_and_arguments_separately() -> None:
    block = {"type": "tool-call", "toolCallId": "c1", "toolName": "bash", "arguments": '{"cmd":"ls"}'}
    assert block_price(block) == 1 + 3 + 4


def test_tool_call_with_decoded_arguments_is_priced_as_their_json_text() -> None:
    block = {"type": "tool-call", "toolCallId": "c1", "toolName": "bash", "arguments": {"cmd": "ls"}}
    assert block_price(block) == 1 + 3 + 4


def test_tool_result_block_sums_its_inner_blocks_plus_four() -> None:
    inner_image = {"type": "image", "mediaType": "image/png", "data": "AAAA"}
    block = {
        "type": "tool-result",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "abcdefgh"}, inner_image],
    }
    image_json = '{"type":"image","mediaType":"image/png","data":"AAAA"}'
    assert block_price(block) == (2 + 4) + (-(-len(image_json) // 4) + 4) + 4


def test_tool_result_nested_in_a_tool_result_is_priced_recursively() -> None:
    inner = {"type": "tool-result", "toolCallId": "c2", "toolName": "x", "content": []}
    block = {"type": "tool-result", "toolCallId": "c1", "toolName": "x", "content": [inner]}
    assert block_price(block) == 4 + 4


def test_other_blocks_are_priced_by_their_compact_json_in_key_order() -> None:
    block = {"type": "image", "mediaType": "image/png", "data": "é" * 10}
    text = '{"type":"image","mediaType":"image/png","data":"' + "é" * 10 + '"}'
    assert block_price(block) == -(-len(text) // 4) + 4


def test_json_of_a_block_keeps_non_ascii_characters_unescaped() -> None:
    assert js_json_stringify({"a": "ü😀"}) == '{"a":"ü😀"}'


def test_json_of_a_block_writes_floats_as_javascript_does() -> None:
    assert js_json_stringify({"a": 1.0, "b": 0.5, "c": 1e-7, "d": 0.00001, "e": 1e21, "f": -2.5e-8}) == (
        '{"a":1,"b":0.5,"c":1e-7,"d":0.00001,"e":1e+21,"f":-2.5e-8}'
    )


def test_json_of_a_block_escapes_lone_surrogates_as_javascript_does() -> None:
    assert js_json_stringify([json.loads('"\\ud800"')]) == '["\\ud800"]'


def test_json_of_a_block_writes_control_characters_as_javascript_does() -> None:
    assert js_json_stringify({"a": "\n\u0001"}) == '{"a":"\\n\\u0001"}'


def test_message_with_string_content_is_one_text_block_plus_four() -> None:
    assert message_price({"role": "user", "content": "abcd"}) == (1 + 4) + 4


def test_message_sums_its_blocks_plus_four() -> None:
    content = [{"type": "text", "text": "abcd"}, {"type": "reasoning", "text": "abcdefgh"}]
    assert message_price({"role": "assistant", "content": content}) == (1 + 4) + (2 + 4) + 4


def test_message_with_empty_block_list_costs_only_its_overhead() -> None:
    assert message_price({"role": "assistant", "content": []}) == 4


def test_message_without_content_is_refused_naming_the_field() -> None:
    with pytest.raises(PriceError, match="'content' is missing"):
        message_price({"role": "user"})


def test_message_with_content_of_another_type_is_refused() -> None:
    with pytest.raises(PriceError, match="'content' must be a string or a list"):
        message_price({"role": "user", "content": 3})


def test_text_block_without_text_is_refused_naming_the_field() -> None:
    with pytest.raises(PriceError, match="'text' must be a string"):
        block_price({"type": "text"})


def test_user_message_event_is_priced_from_its_data() -> None:
    assert event_price(event("user/message", {"id": "u1", "role": "user", "content": "abcd"})) == 9


def test_other_surface_events_are_priced_from_their_message_field() -> None:
    data = {"turn": 1, "step": 0, "message": {"role": "system", "content": "abcdefgh"}}
    assert event_price(event("system/message", data)) == (2 + 4) + 4


def test_event_without_a_message_is_refused_naming_seq_and_field() -> None:
    with pytest.raises(PriceError, match=r"seq 7 \(tool/result\): field 'data.message'"):
        event_price(event("tool/result", {"turn": 1}, seq=7))


def test_event_with_a_bad_block_names_its_seq() -> None:
    data = {"message": {"role": "assistant", "content": [{"type": "text", "text": 5}]}}
    with pytest.raises(PriceError, match=r"seq 3 \(assistant/message\)"):
        event_price(event("assistant/message", data, seq=3))


def test_tool_call_block_as_the_harness_writes_it_prices_its_name() -> None:
    block = {"type": "tool-call", "id": "c1", "name": "read_file", "arguments": '{"p":1}'}
    assert block_price(block) == 3 + 2 + 4


def test_tool_call_block_without_a_name_is_unpriceable() -> None:
    with pytest.raises(PriceError, match="field 'name' must be a string"):
        block_price({"type": "tool-call", "id": "c1", "arguments": "{}"})


def test_an_assistant_message_without_content_costs_nothing() -> None:
    # The harness derives no message from it: it only hosts a max-tokens step's usage.
    data = {"turn": 1, "step": 1, "message": {"role": "assistant", "content": []}, "usage": {}}
    assert event_price(event("assistant/message", data)) == 0
    assert event_price(event("user/message", {"role": "user", "content": []})) == 4


def test_messages_written_inline_by_older_harness_builds_are_priced_as_derived() -> None:
    inner = [{"type": "text", "text": "abcdefgh"}]
    assistant = event("assistant/message", {"turn": 1, "step": 1, "content": inner, "provenance": {}})
    result = event("tool/result", {"turn": 1, "step": 1, "callId": "c1", "content": inner, "isError": False})
    assert event_price(assistant) == (2 + 4) + 4
    assert event_price(result) == ((2 + 4) + 4) + 4


def test_a_surface_event_without_a_message_names_the_field() -> None:
    with pytest.raises(PriceError, match=r"seq 3 \(tool/result\): field 'data\.message' must be an object"):
        event_price(event("tool/result", {"turn": 1}, seq=3))


def header(**fields: object) -> EventRecord:
    return event("request/header", {"header": {"config": {"provider": "p", "model": "m"}, **fields}})


def test_a_header_system_prompt_costs_a_quarter_of_its_length_plus_four() -> None:
    assert header_system_tokens(header(system="x" * 9)) == 3 + 4
    assert header_system_tokens(header(system="")) == 0
    assert header_system_tokens(header()) == 0


def test_header_tool_schemas_cost_a_quarter_of_their_compact_json_plus_four() -> None:
    tools = [{"name": "bash", "description": "Run é", "parameters": {"type": "object"}}]
    text = '[{"name":"bash","description":"Run é","parameters":{"type":"object"}}]'
    assert header_tools_tokens(header(tools=tools)) == -(-len(text) // 4) + 4
    assert header_tools_tokens(header(tools=[])) == 0
    assert header_tools_tokens(header()) == 0


def test_a_placeholder_string_for_tools_is_measured_as_its_json_text() -> None:
    # The harness's recorded test snapshots write "{{tools}}"; its meter measures '"{{tools}}"'.
    assert header_tools_tokens(header(tools="{{tools}}")) == 3 + 4


def test_a_header_field_of_the_wrong_kind_is_unpriceable() -> None:
    with pytest.raises(PriceError, match=r"'data\.header\.system' must be a string"):
        header_system_tokens(header(system=[{"type": "text", "text": "x"}]))
    with pytest.raises(PriceError, match=r"'data\.header\.tools' must be a list"):
        header_tools_tokens(header(tools={"bash": {}}))
