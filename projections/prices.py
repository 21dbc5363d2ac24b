"""Heuristic token prices of messages and blocks (DESIGN §4.2).

The harness estimates 4 UTF-16 code units per token, rounded up, plus fixed overheads. These figures
are displayed next to the harness's own, so they are reproduced exactly: lengths count UTF-16 code
units (Python's ``len`` counts code points), and an unknown block is measured as JavaScript's
``JSON.stringify`` would write it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from projections.normalized import JSON, EventRecord

BLOCK_OVERHEAD = 4
"""Tokens added to every block, on top of its text."""

MESSAGE_OVERHEAD = 4
"""Tokens added to every message, on top of its blocks."""

CHARS_PER_TOKEN = 4
"""UTF-16 code units per heuristic token."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_JS_EXPONENT_LOW = -6
_JS_EXPONENT_HIGH = 21


class PriceError(ValueError):
    """A message or block whose shape cannot be priced; the message names the field."""


def utf16_len(s: str) -> int:
    """The length of ``s`` in UTF-16 code units: astral-plane characters count 2."""
    if s.isascii():
        return len(s)
    # surrogatepass: a lone surrogate decoded from JSON is one code unit, as in JavaScript.
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _tokens(s: str) -> int:
    return -(-utf16_len(s) // CHARS_PER_TOKEN)


def block_price(block: Mapping[str, JSON]) -> int:
    """The heuristic price of one content block, with its overhead."""
    kind = block.get("type")
    if kind == "text" or kind == "reasoning":
        return _tokens(_str_field(block, "text")) + BLOCK_OVERHEAD
    if kind == "tool-call":
        return _tokens(_tool_name(block)) + _tokens(_arguments(block)) + BLOCK_OVERHEAD
    if kind == "tool-result":
        inner = block.get("content")
        if not isinstance(inner, list):
            raise PriceError(f"tool-result block: field 'content' must be a list, got {_kind(inner)}")
        return sum(_inner_block_price(item) for item in inner) + BLOCK_OVERHEAD
    return _tokens(js_json_stringify(block)) + BLOCK_OVERHEAD


def content_price(content: JSON) -> int:
    """The price of a message's content (a string is one text block), without the message overhead."""
    if isinstance(content, str):
        return _tokens(content) + BLOCK_OVERHEAD
    if isinstance(content, list):
        return sum(_inner_block_price(block) for block in content)
    raise PriceError(f"message: field 'content' must be a string or a list, got {_kind(content)}")


def message_price(message: Mapping[str, JSON]) -> int:
    """The heuristic price of a message: its blocks plus the message overhead."""
    if "content" not in message:
        raise PriceError("message: field 'content' is missing")
    return content_price(message["content"]) + MESSAGE_OVERHEAD


def event_price(event: EventRecord) -> int:
    """The price of the message a surface event derives to, as the harness derives it.

    ``user/message`` carries role and content in its data; the other surface events carry a
    ``message`` field. Harness builds before 2026-07-28 wrote the message's fields inline instead:
    an ``assistant/message`` with ``data.content``, and a ``tool/result`` with ``data.callId``,
    ``data.content`` and ``data.isError``, which derives to one ``tool-result`` block.
    """
    try:
        message = _derived_message(event)
        if event.type == "assistant/message" and _has_no_content(message):
            # The harness derives no message from it (it only hosts a max-tokens step's usage), so
            # its meter adds nothing for it.
            return 0
        return message_price(message)
    except PriceError as error:
        raise PriceError(f"seq {event.seq} ({event.type}): {error}") from None


def _derived_message(event: EventRecord) -> Mapping[str, JSON]:
    data = event.data
    if event.type == "user/message":
        return data
    message = data.get("message")
    if isinstance(message, Mapping):
        return message
    if message is None and "content" in data:
        if event.type == "tool/result":
            block = {"type": "tool-result", "toolCallId": data.get("callId"), "content": data["content"]}
            return {"role": "user", "content": [block]}
        return data
    raise PriceError(f"field 'data.message' must be an object, got {_kind(message)}")


def js_json_stringify(value: JSON) -> str:
    """``value`` serialized as JavaScript's ``JSON.stringify`` writes it (no whitespace, keys in order)."""
    if not _needs_js_rewrite(value):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _stringify(value)


def _inner_block_price(block: JSON) -> int:
    if not isinstance(block, Mapping):
        raise PriceError(f"content block must be an object, got {_kind(block)}")
    return block_price(block)


def _str_field(block: Mapping[str, JSON], name: str) -> str:
    value = block.get(name)
    if not isinstance(value, str):
        raise PriceError(f"{block.get('type')} block: field {name!r} must be a string, got {_kind(value)}")
    return value


def _tool_name(block: Mapping[str, JSON]) -> str:
    # The harness writes ``name``; Cachescope's importers of other formats once wrote ``toolName``,
    # and logs stored then still hold it.
    return _str_field(block, "name" if "name" in block or "toolName" not in block else "toolName")


def _has_no_content(message: Mapping[str, JSON]) -> bool:
    content = message.get("content")
    return isinstance(content, str | list) and len(content) == 0


def _arguments(block: Mapping[str, JSON]) -> str:
    arguments = block.get("arguments")
    if isinstance(arguments, str):
        return arguments
    # Some producers keep the arguments decoded; the harness measures them as their JSON text.
    if isinstance(arguments, Mapping | list):
        return js_json_stringify(arguments)
    raise PriceError(f"tool-call block: field 'arguments' must be JSON text, got {_kind(arguments)}")


def _kind(value: object) -> str:
    return "missing" if value is None else type(value).__name__


def _needs_js_rewrite(value: Any) -> bool:
    """Whether Python's encoder would write ``value`` differently from JavaScript's."""
    if isinstance(value, float):
        return True
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, Mapping):
        return any(_needs_js_rewrite(k) or _needs_js_rewrite(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_needs_js_rewrite(item) for item in value)
    return False


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_js_string(str(k))}:{_stringify(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_stringify(item) for item in value) + "]"
    raise PriceError(f"cannot serialize a {type(value).__name__} as JSON")


def _js_string(s: str) -> str:
    encoded = json.dumps(s, ensure_ascii=False)
    if _SURROGATE.search(encoded) is None:
        return encoded
    # JavaScript keeps a surrogate pair as it is but escapes a lone surrogate as \uXXXX.
    out: list[str] = []
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        code = ord(ch)
        if 0xD800 <= code <= 0xDBFF and i + 1 < len(encoded) and 0xDC00 <= ord(encoded[i + 1]) <= 0xDFFF:
            out.append(encoded[i : i + 2])
            i += 2
            continue
        out.append(f"\\u{code:04x}" if 0xD800 <= code <= 0xDFFF else ch)
        i += 1
    return "".join(out)


def _js_number(x: float) -> str:
    """A float as JavaScript's Number.prototype.toString writes it (ECMA-262 Number::toString)."""
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest round-trip digits, the same digits JavaScript chooses.
    digits_tuple, exponent = Decimal(repr(abs(x))).normalize().as_tuple()[1:]
    digits = "".join(str(d) for d in digits_tuple)
    k = len(digits)
    assert isinstance(exponent, int)
    n = exponent + k  # value = 0.digits * 10**n
    if k <= n <= _JS_EXPONENT_HIGH:
        return sign + digits + "0" * (n - k)
    if 0 < n <= _JS_EXPONENT_HIGH:
        return sign + digits[:n] + "." + digits[n:]
    if _JS_EXPONENT_LOW < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    e = n - 1
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def header_system_tokens(event: EventRecord) -> int:
    """The price of the system prompt a ``request/header`` carries, as the harness's meter prices the
    newest request envelope: ⌈len/4⌉ + 4 for a non-empty prompt, 0 without one."""
    system = _header(event).get("system")
    if system is None:
        return 0
    if not isinstance(system, str):
        raise PriceError(f"request/header: field 'data.header.system' must be a string, got {_kind(system)}")
    return _tokens(system) + MESSAGE_OVERHEAD if system else 0


def header_tools_tokens(event: EventRecord) -> int:
    """The price of the tool schemas a ``request/header`` carries, as the harness's meter prices them:
    ⌈len(JSON of the tools)/4⌉ + 4, the JSON written as JavaScript's ``JSON.stringify`` writes it;
    0 without tools or with an empty list."""
    tools = _header(event).get("tools")
    if tools is None:
        return 0
    # A list of schemas, or in the harness's recorded test snapshots a placeholder string: the meter
    # measures either as its JSON text.
    if not isinstance(tools, list | str):
        raise PriceError(f"request/header: field 'data.header.tools' must be a list, got {_kind(tools)}")
    return _tokens(js_json_stringify(tools)) + BLOCK_OVERHEAD if tools else 0


def _header(event: EventRecord) -> Mapping[str, JSON]:
    header = event.data.get("header")
    if not isinstance(header, Mapping):
        raise PriceError(f"request/header: field 'data.header' must be an object, got {_kind(header)}")
    return header


def header_system_price(event: EventRecord) -> int | None:
    """The price of the system prompt a version 0 ``request/header`` carries, or ``None`` without one.

    The harness prices a header system prompt as a system message of that content.
    """
    header = event.data.get("header")
    if not isinstance(header, Mapping) or header.get("system") is None:
        return None
    return content_price(header["system"]) + 4
