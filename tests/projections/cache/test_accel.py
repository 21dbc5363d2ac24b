"""The C hash of a request's units gives exactly what its plain-Python twin gives."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from hashlib import blake2b
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.cache.render import accel
from projections.cache.render.canonical import (
    DIGEST_SIZE,
    canonical_array,
    canonical_bytes,
    python_hash_units,
)
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import RenderError, render_request
from projections.normalized import Usage

pytestmark = pytest.mark.skipif(accel.native is None, reason="the C extension is not built here")

texts = st.text(max_size=30) | st.sampled_from(
    ["é", "😀 emoji", 'a "quote"', "back\\slash", "\n\t\x00", "x" * 300, "日本語のテキスト" * 9, "aé😀" * 30]
)
control = st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}])


def _marked(block: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(block, st.builds(lambda b, c: {**b, "cache_control": c}, block, control))


blocks = st.one_of(
    _marked(st.builds(lambda t: {"type": "text", "text": t}, texts)),
    _marked(
        st.builds(lambda t: {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": t}}, texts)
    ),
    _marked(st.builds(lambda t: {"type": "tool_result", "tool_use_id": "t1", "content": t}, texts)),
    st.builds(
        lambda t, c: {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [{"type": "text", "text": t, **c}],
        },
        texts,
        st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}]),
    ),
    st.builds(lambda t: {"type": "image", "source": {"type": "base64", "data": t}}, texts),
    st.builds(lambda t: {"type": "document", "citations": {"enabled": True}, "source": t}, texts),
    st.sampled_from([{"type": "redacted_thinking", "data": "x"}, {"type": "input_text", "text": "x"}, {}]),
    st.builds(lambda n: {"type": n, "value": 1.5}, st.integers()),
    texts,
    st.integers(),
)
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | st.none() | st.integers()
calls = st.lists(st.builds(lambda t: {"id": "c1", "type": "function", "function": {"arguments": t}}, texts))


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["role"] = draw(roles)
    content = draw(st.none() | texts | st.lists(blocks, max_size=3))
    if content is not None or draw(st.booleans()):
        out["content"] = content
    if draw(st.booleans()):
        out["id"] = draw(st.sampled_from(["msg_1", "msg_2"]) | st.integers())
    if draw(st.booleans()):
        out["tool_calls"] = draw(calls)
    if out.get("role") == "tool" and draw(st.booleans()):
        out["tool_call_id"] = "c1"
    return out


usages = st.one_of(
    st.none(),
    st.builds(
        lambda read, write, uncached: Usage(uncached, read, write, None, 10, "anthropic"),
        st.integers(0, 5_000),
        st.integers(0, 5_000),
        st.integers(0, 5_000),
    ),
    st.builds(lambda total: Usage(total, None, None, None, 10, "openai"), st.integers(0, 50_000)),
)


def fields(rendered: RenderedRequest) -> dict[str, Any]:
    return {name: getattr(rendered, name) for name in rendered.__slots__}  # type: ignore[attr-defined]


def both(render: Callable[[], object]) -> Iterator[object]:
    """Run ``render`` with the C hash, then with the plain-Python one."""
    native = accel.native
    yield render()
    accel.native = None
    try:
        yield render()
    finally:
        accel.native = native


def outcome(render: Callable[[], RenderedRequest]) -> object:
    try:
        return fields(render())
    except RenderError as error:
        return f"RenderError: {error}"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(message(), max_size=6),
    st.sampled_from(["messages", "chat"]),
    st.booleans(),
    usages,
)
def test_every_request_renders_alike_with_the_c_hash_and_the_python_one(
    messages: list[dict[str, Any]], api: str, top_marker: bool, usage: Usage | None
) -> None:
    request: dict[str, Any] = {"model": "claude-sonnet-4-5", "messages": messages}
    request["system"] = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    request["tools"] = [{"name": "Bash", "input_schema": {"type": "object"}}]
    if top_marker:
        request["cache_control"] = {"type": "ephemeral"}
    c, python = both(lambda: outcome(lambda: render_request("anthropic", api, request, usage=usage)))
    assert c == python


def test_every_block_hash_is_blake2b_128_across_block_boundaries() -> None:
    # Every length through five 128-byte compression blocks, lengths past the 64 blocks the four-lane
    # hash sorts units by, and a count that leaves units over for the one-at-a-time hash.
    lengths = [*range(1, 5 * 128 + 2), 9000, 20000, 2, 3]
    raws: list[Any] = ["x" * (n - 2) if n >= 2 else 7 for n in lengths]  # a string's bytes add its quotes
    parts = [canonical_bytes(raw) for raw in raws]
    framing = (b"M" * len(raws), b"u" * len(raws), b"|" * len(raws))
    chain = os.urandom(DIGEST_SIZE)
    assert accel.native is not None
    chars, block_hashes, prefixes = accel.native.hash_units(canonical_array(raws), *framing, chain, [])
    assert block_hashes == [blake2b(p, digest_size=DIGEST_SIZE).hexdigest() for p in parts]
    assert (chars, block_hashes, prefixes) == python_hash_units(parts, framing, chain, [])


@given(st.lists(texts | st.integers() | st.dictionaries(texts, texts, max_size=3), max_size=12), st.data())
def test_the_c_walk_hashes_and_chains_as_the_python_walk_does(raws: list[Any], data: st.DataObject) -> None:
    n = len(raws)
    tags = st.binary(min_size=n, max_size=n)
    framing = (data.draw(tags), data.draw(tags), data.draw(tags))
    positions = sorted(data.draw(st.sets(st.integers(0, max(0, n - 1)), max_size=3))) if n else []
    mixes = [(p, os.urandom(DIGEST_SIZE) * data.draw(st.integers(1, 2))) for p in positions]
    chain = os.urandom(DIGEST_SIZE)
    assert accel.native is not None
    c = accel.native.hash_units(canonical_array(raws), *framing, chain, mixes)
    assert c == python_hash_units([canonical_bytes(r) for r in raws], framing, chain, mixes)


def test_the_c_walk_refuses_an_array_that_does_not_match_its_framing() -> None:
    assert accel.native is not None
    with pytest.raises(ValueError, match="more than 1 elements"):
        accel.native.hash_units(b'["a","b"]', b"M", b"u", b"|", bytes(16), [])
    with pytest.raises(ValueError, match="not a compact JSON value"):
        accel.native.hash_units(b'["a"]', b"MM", b"uu", b"||", bytes(16), [])
    with pytest.raises(ValueError, match="expected a JSON array"):
        accel.native.hash_units(b"{}", b"", b"", b"", bytes(16), [])
