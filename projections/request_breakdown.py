"""How much of one provider request is system prompt, tool schemas and messages, priced from its body.

The prices are the harness meter's heuristic (DESIGN §4.2, :mod:`projections.prices`), so a
capture's figures sit beside a dsh log's: a text block is ⌈UTF-16 length / 4⌉ + 4, a message adds
4, the system prompt is priced as a system message of its content, and the tool list as
⌈length of its JSON / 4⌉ + 4. An image is priced as the meter prices one — 85 tokens plus 170 per
512-pixel tile — with its size read from the image's own header; an image whose size cannot be
read counts as one tile.

For a source that logs usage but no body (Claude Code transcripts), :func:`inferred_envelope`
gives the part of the provider's prompt the messages do not explain: the system prompt and tool
schemas together, which such a source never writes down.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from projections.formats.anthropic.blocks import to_dsh_blocks
from projections.normalized import JSON
from projections.prices import (
    BLOCK_OVERHEAD,
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    PriceError,
    block_price,
    js_json_stringify,
    utf16_len,
)

IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_TILE_EDGE = 512
"""The meter's provider-neutral image estimate: a base cost and one unit per 512-pixel tile."""

_HEADER_BYTES = 64 * 1024
"""Enough of an image to find its size: PNG and GIF say it in the first 30 bytes, JPEG in a frame
header that follows its metadata segments."""

_SYSTEM_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class RequestBreakdown:
    """Heuristic tokens of one request's system prompt, tool schemas and messages."""

    system_tokens: int
    tools_tokens: int
    message_tokens: int

    @property
    def total(self) -> int:
        """All three together: the heuristic size of the prompt."""
        return self.system_tokens + self.tools_tokens + self.message_tokens


def body_breakdown(api: str, body: Mapping[str, JSON]) -> RequestBreakdown:
    """Price a request body as sent: ``api`` is ``messages`` (Anthropic), ``chat`` or ``responses`` (OpenAI).

    Raises :class:`PriceError` naming the field when the body has a shape no provider sends.
    """
    if api == "messages":
        return _anthropic(body)
    if api == "chat":
        return _openai_chat(body)
    if api == "responses":
        return _openai_responses(body)
    raise PriceError(f"request body: unknown api {api!r} (known: messages, chat, responses)")


def tools_price(tools: JSON) -> int:
    """The price of a tool list: ⌈length of its JSON / 4⌉ + 4, and 0 for no tools."""
    if tools is None or tools == []:
        return 0
    if not isinstance(tools, list):
        raise PriceError(f"request body: field 'tools' must be a list, got {type(tools).__name__}")
    return _tokens(js_json_stringify(tools)) + BLOCK_OVERHEAD


def inferred_envelope(prompt_tokens: int | None, message_tokens: int) -> int | None:
    """The part of a provider-reported prompt the priced messages do not explain, floored at 0.

    For a source without request bodies this is the system prompt and tool schemas together (plus
    the heuristic's error on the messages); ``None`` when the provider reported no prompt.
    """
    if prompt_tokens is None:
        return None
    return max(0, prompt_tokens - message_tokens)


# --- Anthropic Messages --------------------------------------------------------------------------


def _anthropic(body: Mapping[str, JSON]) -> RequestBreakdown:
    system = body.get("system")
    system_tokens = 0 if system in (None, "", []) else _system_message_price(to_dsh_blocks(system))
    messages = body.get("messages", [])
    if not isinstance(messages, list):
        raise PriceError(f"request body: field 'messages' must be a list, got {type(messages).__name__}")
    tool_names: dict[str, str] = {}
    message_tokens = 0
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise PriceError(f"request body: messages[{index}] must be an object")
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") in ("tool_use", "server_tool_use"):
                    tool_names[str(block.get("id", ""))] = str(block.get("name", ""))
        try:
            message_tokens += _content_price(to_dsh_blocks(content, tool_names)) + MESSAGE_OVERHEAD
        except PriceError as error:
            raise PriceError(f"request body: messages[{index}]: {error}") from None
    return RequestBreakdown(system_tokens, tools_price(body.get("tools")), message_tokens)


def _system_message_price(blocks: Sequence[JSON]) -> int:
    """A system prompt priced as a system message of its content, as the meter prices a header's."""
    return _content_price(blocks) + MESSAGE_OVERHEAD


def _content_price(blocks: Sequence[JSON]) -> int:
    total = 0
    for block in blocks:
        if not isinstance(block, Mapping):
            raise PriceError(f"content block must be an object, got {type(block).__name__}")
        kind = block.get("type")
        if kind == "image":
            total += image_price(block)
        elif kind == "tool-result":
            inner = block.get("content")
            total += _content_price(inner if isinstance(inner, list) else []) + BLOCK_OVERHEAD
        else:
            total += block_price(block)
    return total


# --- OpenAI Chat Completions and Responses -------------------------------------------------------


def _openai_chat(body: Mapping[str, JSON]) -> RequestBreakdown:
    system = 0
    messages = 0
    for index, message in enumerate(_list_field(body, "messages")):
        if not isinstance(message, Mapping):
            raise PriceError(f"request body: messages[{index}] must be an object")
        blocks = _openai_parts(message.get("content"))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            blocks.append(
                {
                    "type": "tool-call",
                    "toolName": str(function.get("name", "")),
                    "arguments": function.get("arguments") or "",
                }
            )
        price = _content_price(blocks) + MESSAGE_OVERHEAD
        if message.get("role") in _SYSTEM_ROLES:
            system += price
        else:
            messages += price
    return RequestBreakdown(system, tools_price(body.get("tools")), messages)


def _openai_responses(body: Mapping[str, JSON]) -> RequestBreakdown:
    instructions = body.get("instructions")
    system = 0 if not instructions else _system_message_price(_openai_parts(instructions))
    messages = 0
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise PriceError(
            f"request body: field 'input' must be a string or a list, got {type(items).__name__}"
        )
    for item in items:
        if not isinstance(item, Mapping):
            raise PriceError("request body: every input item must be an object")
        kind = item.get("type", "message")
        if kind == "function_call":
            blocks: list[JSON] = [
                {
                    "type": "tool-call",
                    "toolName": str(item.get("name", "")),
                    "arguments": item.get("arguments") or "",
                }
            ]
        elif kind == "function_call_output":
            blocks = [{"type": "tool-result", "content": _openai_parts(item.get("output"))}]
        elif kind == "message":
            blocks = _openai_parts(item.get("content"))
        else:
            blocks = [dict(item)]
        price = _content_price(blocks) + MESSAGE_OVERHEAD
        if item.get("role") in _SYSTEM_ROLES:
            system += price
        else:
            messages += price
    return RequestBreakdown(system, tools_price(body.get("tools")), messages)


def _openai_parts(content: JSON) -> list[JSON]:
    """OpenAI content (a string or a list of parts) as meter blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return [{"type": "text", "text": js_json_stringify(content)}]
    blocks: list[JSON] = []
    for part in content:
        if not isinstance(part, Mapping):
            blocks.append({"type": "text", "text": str(part)})
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind in ("image_url", "input_image"):
            url = part.get("image_url")
            if isinstance(url, Mapping):
                url = url.get("url")
            blocks.append({"type": "image", "data": _data_url_payload(url)})
        else:
            blocks.append(dict(part))
    return blocks


def _data_url_payload(url: JSON) -> str:
    """The base64 payload of a ``data:`` URL, or ``""`` for a link the request only points to."""
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        return url.split(",", 1)[1]
    return ""


def _list_field(body: Mapping[str, JSON], name: str) -> list[JSON]:
    value = body.get(name, [])
    if not isinstance(value, list):
        raise PriceError(f"request body: field {name!r} must be a list, got {type(value).__name__}")
    return value


# --- images --------------------------------------------------------------------------------------


def image_price(block: Mapping[str, JSON]) -> int:
    """The meter's price of an image block: 85 + 170 per 512-pixel tile + 4.

    The size comes from the image bytes (``data``, base64) when their header can be read; an
    image sent by URL, or in a format whose size is not found, counts as one tile.
    """
    data = block.get("data")
    size = image_size(data) if isinstance(data, str) and data else None
    tiles = 1 if size is None else math.ceil(size[0] / IMAGE_TILE_EDGE) * math.ceil(size[1] / IMAGE_TILE_EDGE)
    return IMAGE_BASE_TOKENS + max(1, tiles) * IMAGE_TILE_TOKENS + BLOCK_OVERHEAD


def image_size(data: str) -> tuple[int, int] | None:
    """Width and height of a base64 PNG, GIF, JPEG or WebP image, or ``None`` when unreadable."""
    head = data[: _HEADER_BYTES * 4 // 3]
    head = head[: len(head) - len(head) % 4]
    try:
        raw = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return width, height
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return width, height
    if raw.startswith(b"\xff\xd8"):
        return _jpeg_size(raw)
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return _webp_size(raw)
    return None


_JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    """Walk the JPEG segments to the first start-of-frame, which holds the size."""
    position = 2
    while position + 9 <= len(raw):
        if raw[position] != 0xFF:
            return None
        marker = raw[position + 1]
        if marker == 0xFF:
            position += 1
            continue
        length = struct.unpack(">H", raw[position + 2 : position + 4])[0]
        if marker in _JPEG_FRAME_MARKERS:
            height, width = struct.unpack(">HH", raw[position + 5 : position + 9])
            return width, height
        position += 2 + length
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X" and len(raw) >= 30:
        width = int.from_bytes(raw[24:27], "little") + 1
        height = int.from_bytes(raw[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 " and len(raw) >= 30:
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(raw) >= 25:
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _tokens(s: str) -> int:
    return -(-utf16_len(s) // CHARS_PER_TOKEN)
