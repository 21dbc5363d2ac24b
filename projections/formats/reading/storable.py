"""Decoded JSON made safe to store and to render: bounded nesting, text every database accepts.

JSON can carry what no text column holds: a lone UTF-16 surrogate (``"\\ud800"``) cannot be encoded
as UTF-8, and PostgreSQL refuses ``U+0000`` in text and jsonb. Both are replaced by U+FFFD, which
keeps every string's length in UTF-16 units (so heuristic prices do not move) and the line is kept
with a note. Nesting is bounded well below Python's recursion limit, so nothing downstream (the
database adapter, the engine, a page) can fail on a value that was accepted here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from projections.normalized import JSON

MAX_JSON_DEPTH = 100
"""The deepest nesting of arrays and objects accepted in one line; real logs stay under 30."""
REPLACEMENT = "\ufffd"

_SURROGATE_LOW = 0xD800
_SURROGATE_HIGH = 0xDFFF
# Bytes that may decode to a character no database stores: a \u escape of NUL or of a surrogate,
# found in one pass (three substring searches took three).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD])")


class TooDeep(ValueError):
    """A value nested deeper than :data:`MAX_JSON_DEPTH`."""


def _finite(text: str) -> float:
    """A JSON number as a float, refusing one past a double's range (``1e400``), which no store holds."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> float:
    # NaN and Infinity are JavaScript, not JSON; PostgreSQL's jsonb refuses them.
    raise ValueError(f"{name} is not a JSON number")


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded JSON value and, when characters had to be replaced, a sentence saying which."""

    value: JSON
    repaired: str = ""


def _unstorable(text: str) -> bool:
    return "\x00" in text or any(_SURROGATE_LOW <= ord(c) <= _SURROGATE_HIGH for c in text)


def _clean(text: str, counts: dict[str, int]) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code == 0:
            counts["U+0000"] = counts.get("U+0000", 0) + 1
            out.append(REPLACEMENT)
        elif _SURROGATE_LOW <= code <= _SURROGATE_HIGH:
            counts["lone surrogate"] = counts.get("lone surrogate", 0) + 1
            out.append(REPLACEMENT)
        else:
            out.append(char)
    return "".join(out)


def _walk(value: JSON, *, repair: bool, counts: dict[str, int]) -> JSON:
    """Check depth iteratively (no recursion: the value may be hostile) and repair strings in place."""
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise TooDeep(f"nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(node, dict):
            for key in list(node):
                child = node[key]
                if repair and isinstance(child, str) and _unstorable(child):
                    node[key] = child = _clean(child, counts)
                if repair and _unstorable(key):
                    node[_clean(key, counts)] = node.pop(key)
                if isinstance(child, dict | list):
                    stack.append((child, depth + 1))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                if repair and isinstance(child, str) and _unstorable(child):
                    node[index] = child = _clean(child, counts)
                if isinstance(child, dict | list):
                    stack.append((child, depth + 1))
    if repair and isinstance(value, str) and _unstorable(value):
        return _clean(value, counts)
    return value


def deeper_than(value: JSON, limit: int) -> bool:
    """Whether arrays and objects nest in ``value`` more than ``limit`` levels deep.

    Walked without recursion, a type test a child, and given up as soon as a level past ``limit``
    is met. A request body's bytes are mostly the text of its strings, so this costs a fraction of
    any scan of the bytes, which has to tell the strings' brackets from the structure's.
    """
    stack: list[tuple[Iterable[JSON], int]] = []
    push, pop = stack.append, stack.pop
    if isinstance(value, dict):
        push((value.values(), 1))
    elif isinstance(value, list):
        push((value, 1))
    while stack:
        children, depth = pop()
        if depth > limit:
            return True
        for child in children:
            if type(child) is dict:
                push((child.values(), depth + 1))
            elif type(child) is list:
                push((child, depth + 1))
    return False


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 20
"""A run of digits that may be an integer past 64 bits, which orjson would turn into a float; found
by turning every digit into 0 and searching for the run, ten times faster than a regular expression."""


def _loads(data: bytes | str, raw: bytes) -> JSON:
    """``json.loads`` with its strict number rules, by orjson where it gives the same value.

    orjson decodes a line several times faster and refuses NaN, infinite numbers and nesting past
    1,024 levels as the standard library does here; what it refuses that the standard library
    accepts (a byte order mark, a lone surrogate, UTF-16) and an integer past 64 bits (which it
    would turn into a float) take the standard library's path, which also words the errors.
    """
    if _LONG_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data, parse_float=_finite, parse_constant=_no_constant)


def decode_storable(data: bytes | str) -> Decoded:
    """Decode one JSON text into a value every store accepts.

    Raises :class:`UnicodeDecodeError` or :class:`json.JSONDecodeError` for text that is not JSON
    (``NaN``, ``Infinity`` and numbers past a double's range included),
    and :class:`TooDeep` for one nested past :data:`MAX_JSON_DEPTH`. The checks cost a walk of the
    value only when a cheap scan of the bytes says they could apply.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = _loads(data, raw)
    except RecursionError:
        raise TooDeep(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
            raise
        raise json.JSONDecodeError(str(error), raw.decode("utf-8", "replace")[:200], 0) from None
    repair = _SUSPECT_ESCAPE.search(raw) is not None or (isinstance(data, str) and _unstorable(data))
    deep = raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and deeper_than(value, MAX_JSON_DEPTH)
    if not repair and not deep:
        return Decoded(value)
    counts: dict[str, int] = {}
    value = _walk(value, repair=repair, counts=counts)
    if not counts:
        return Decoded(value)
    found = ", ".join(f"{count} {what}" for what, count in sorted(counts.items()))
    return Decoded(value, f"replaced {found} by U+FFFD, which no database text can hold; the line is kept")
