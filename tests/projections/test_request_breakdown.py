from __future__ import annotations

import base64
import json
import math
import struct
import zlib

import pytest

from projections.prices import PriceError
from projections.request_breakdown import (
    IMAGE_BASE_TOKENS,
    IMAGE_TILE_TOKENS,
    RequestBreakdown,
    body_breakdown,
    image_price,
    image_size,
    inferred_envelope,
    tools_price,
)

SYSTEM_TEXT = "You are Claude Code, Anthropic's official CLI for Claude. Be concise; cite file:line."
TOOLS = [
    {
        "name": "Read",
        "description": "Reads a file from the local filesystem.",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string", "description": "The absolute path"}},
            "required": ["file_path"],
        },
    },
    {
        "name": "Bash",
        "description": "Runs a shell command — émoji 🚀 counts two UTF-16 units.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    },
]


def ceil4(text: str) -> int:
    return math.ceil(len(text.encode("utf-16-le")) // 2 / 4)


def png(width: int, height: int) -> str:
    """A base64 PNG whose header says ``width`` x ``height`` (the pixels are not needed)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk).decode()


def jpeg(width: int, height: int) -> str:
    """A base64 JPEG with an APP0 segment before the frame header that carries the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return base64.b64encode(b"\xff\xd8" + app0 + sof0 + b"\xff\xd9").decode()


def anthropic_body(system: object) -> dict[str, object]:
    return {
        "model": "claude-sonnet-4-20250514",
        "system": system,
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": "list the files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should run ls", "signature": "sig"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md\nsetup.py"},
                    {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
                ],
            },
        ],
    }


def test_an_anthropic_body_prices_system_tools_and_messages_like_the_meter() -> None:
    found = body_breakdown("messages", anthropic_body(SYSTEM_TEXT))
    assert found.system_tokens == ceil4(SYSTEM_TEXT) + 4 + 4
    assert found.tools_tokens == ceil4(json.dumps(TOOLS, separators=(",", ":"), ensure_ascii=False)) + 4
    user = ceil4("list the files") + 4 + 4
    assistant = (ceil4("I should run ls") + 4) + (ceil4("Bash") + ceil4('{"command":"ls -la"}') + 4) + 4
    results = (ceil4("README.md\nsetup.py") + 4 + 4) + (ceil4("and now?") + 4) + 4
    assert found.message_tokens == user + assistant + results
    assert found.total == found.system_tokens + found.tools_tokens + found.message_tokens


def test_a_string_system_prompt_and_the_same_text_as_one_block_price_alike() -> None:
    as_string = body_breakdown("messages", anthropic_body(SYSTEM_TEXT))
    as_blocks = body_breakdown(
        "messages",
        anthropic_body([{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}}]),
    )
    assert as_string == as_blocks


def test_a_system_prompt_in_two_blocks_adds_one_block_overhead() -> None:
    halves = [{"type": "text", "text": SYSTEM_TEXT[:40]}, {"type": "text", "text": SYSTEM_TEXT[40:]}]
    split = body_breakdown("messages", anthropic_body(halves)).system_tokens
    assert split == ceil4(SYSTEM_TEXT[:40]) + ceil4(SYSTEM_TEXT[40:]) + 4 + 4 + 4


def test_a_request_without_system_or_tools_prices_them_at_zero() -> None:
    body = {"model": "claude-3-5-haiku-20241022", "messages": [{"role": "user", "content": "quota"}]}
    assert body_breakdown("messages", body) == RequestBreakdown(0, 0, ceil4("quota") + 8)


def test_an_image_is_priced_by_its_tiles_not_by_its_base64() -> None:
    data = png(1024, 600)
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
                ],
            }
        ]
    }
    tiles = 2 * 2
    assert (
        body_breakdown("messages", body).message_tokens
        == IMAGE_BASE_TOKENS + tiles * IMAGE_TILE_TOKENS + 4 + 4
    )


def test_an_image_inside_a_tool_result_is_priced_as_an_image() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/jpeg",
                                    "data": jpeg(300, 200),
                                },
                            }
                        ],
                    }
                ],
            }
        ]
    }
    assert (
        body_breakdown("messages", body).message_tokens == (IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS + 4) + 4 + 4
    )


def test_image_sizes_are_read_from_png_jpeg_and_gif_headers() -> None:
    assert image_size(png(1920, 1080)) == (1920, 1080)
    assert image_size(jpeg(640, 480)) == (640, 480)
    gif = base64.b64encode(b"GIF89a" + struct.pack("<HH", 33, 44) + b"\x00" * 8).decode()
    assert image_size(gif) == (33, 44)
    assert image_size(base64.b64encode(b"not an image at all").decode()) is None


def test_an_image_of_unknown_size_counts_as_one_tile() -> None:
    linked = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert image_price(linked) == IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS + 4


def test_an_openai_chat_body_counts_system_and_developer_messages_as_system() -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    body = {
        "model": "gpt-4o",
        "tools": tools,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "developer", "content": [{"type": "text", "text": "use tools"}]},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q":"x"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "found"},
        ],
    }
    found = body_breakdown("chat", body)
    assert found.system_tokens == (ceil4("be brief") + 8) + (ceil4("use tools") + 8)
    assert found.tools_tokens == tools_price(tools) > 0
    assert found.message_tokens == (ceil4("hi") + 8) + (ceil4("search") + ceil4('{"q":"x"}') + 8) + (
        ceil4("found") + 8
    )


def test_an_openai_responses_body_takes_instructions_as_the_system_prompt() -> None:
    body = {
        "model": "gpt-5",
        "instructions": "You are a coding agent.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
            {"type": "function_call", "call_id": "c", "name": "shell", "arguments": '{"cmd":"ls"}'},
            {"type": "function_call_output", "call_id": "c", "output": "a.py"},
        ],
    }
    found = body_breakdown("responses", body)
    assert found.system_tokens == ceil4("You are a coding agent.") + 8
    assert found.tools_tokens == 0
    assert found.message_tokens == (ceil4("fix it") + 8) + (ceil4("shell") + ceil4('{"cmd":"ls"}') + 8) + (
        ceil4("a.py") + 4 + 4 + 4
    )


def test_a_body_of_the_wrong_shape_is_refused_with_its_field() -> None:
    with pytest.raises(PriceError, match="field 'messages' must be a list"):
        body_breakdown("messages", {"messages": "hello"})
    with pytest.raises(PriceError, match="field 'tools' must be a list"):
        body_breakdown("messages", {"messages": [], "tools": {"name": "x"}})
    with pytest.raises(PriceError, match="unknown api 'completions'"):
        body_breakdown("completions", {})


def test_the_inferred_envelope_is_the_prompt_the_messages_do_not_explain() -> None:
    assert inferred_envelope(15_036, 1_335) == 13_701
    assert inferred_envelope(100, 400) == 0
    assert inferred_envelope(None, 400) is None
