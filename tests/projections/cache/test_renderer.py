"""A session's requests rendered in order, each taking the units it shares with an earlier one,
render exactly as each body rendered alone does."""

from __future__ import annotations

import copy
import re
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.cache.render import accel
from projections.cache.render.canonical import canonical_bytes, chain_units, python_chain_units
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import Renderer, RenderError, render_request
from projections.cache.render.reuse import python_shared_prefix, same_json, shared_messages
from projections.normalized import Usage

SONNET = "claude-sonnet-4-5-20250929"  # keeps only the last turn's thinking
OPUS = "claude-opus-4-6"  # keeps every thinking block
MARK = {"type": "ephemeral"}
TOOLS = [
    {"name": f"tool_{i}", "description": f"does {i}", "input_schema": {"type": "object"}} for i in range(3)
]


@pytest.fixture(params=["native", "plain"])
def twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the C extension and with its plain-Python twins."""
    if request.param == "plain":
        monkeypatch.setattr(accel, "native", None)
    elif accel.native is None:
        pytest.skip("the C extension is not built here")
    return str(request.param)


def same_renderings(
    bodies: list[dict[str, Any]], *, api: str = "messages", provider: str = "anthropic"
) -> int:
    """Every body rendered through one Renderer equals it rendered alone, field by field. Returns
    how many took units from an earlier rendering (their blocks are that rendering's objects)."""
    renderer = Renderer()
    earlier: list[RenderedRequest] = []
    took = 0
    for n, body in enumerate(bodies):
        usage = Usage(10, 0, 0, 0, 5, "anthropic" if provider == "anthropic" else "openai", {})
        alone = render_request(provider, api, body, usage=usage)
        in_order = renderer.render(provider, api, body, usage=usage)
        for field in fields(RenderedRequest):
            assert getattr(in_order, field.name) == getattr(alone, field.name), (n, field.name)
        seen = {id(raw) for rendered in earlier for raw in rendered.raws}
        took += any(id(raw) in seen for raw in in_order.raws)
        earlier = [in_order, *earlier][:4]
    return took


def turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"reply {i}"}, _call(i)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"out {i}"}]},
    ]


def _call(i: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"t{i}", "name": "tool_0", "input": {"n": i}}


def anthropic(
    messages: list[dict[str, Any]], *, system: str = "You help.", model: str = SONNET
) -> dict[str, Any]:
    """A body as a client sends it: a marker on the system prompt and on the last message."""
    sent = copy.deepcopy(messages)
    sent[-1]["content"][-1]["cache_control"] = MARK
    return {
        "model": model,
        "tools": copy.deepcopy(TOOLS),
        "system": [{"type": "text", "text": system, "cache_control": MARK}],
        "messages": sent,
    }


def growing(requests: int) -> list[list[dict[str, Any]]]:
    """The message lists of a session that appends a tool call and its result per request."""
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "start"}]}]
    lists = []
    for i in range(requests):
        lists.append(copy.deepcopy(history))
        history += turn(i)
    return lists


def test_a_growing_session_with_a_moving_marker_and_a_clock_renders_as_each_body_alone(twin: str) -> None:
    # The clock changes every other request: the shared messages must be linked again behind it.
    bodies = [anthropic(m, system=f"Time {i // 2}. You help.") for i, m in enumerate(growing(12))]
    assert same_renderings(bodies) == 11


def test_an_edit_deep_in_the_history_stops_the_sharing_there(twin: str) -> None:
    lists = growing(8)
    edited = copy.deepcopy(lists[-1])
    edited[3]["content"][0]["content"] = "out 1, edited"
    assert same_renderings([anthropic(m) for m in [*lists, edited]]) == 8


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (1, 1.0),
        (1, True),
        (0.0, -0.0),
        (0, False),
        ("1", 1),
        (None, False),
        ([1], [1.0]),
        ({"a": 1}, {"a": 1.0}),
    ],
)
def test_values_python_calls_equal_but_json_writes_otherwise_are_not_shared(
    twin: str, before: object, after: object
) -> None:
    # 1 == 1.0 == True in Python, yet the provider sees "1", "1.0" and "true": a cache miss.
    first = [
        {"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"v": before}}]}
    ]
    second = [
        {"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"v": after}}]}
    ]
    extra = [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    bodies = [anthropic([*first, *extra]), anthropic([*second, *extra, *extra])]
    same_renderings(bodies)
    renderer = Renderer()
    renderings = [renderer.render("anthropic", "messages", b) for b in bodies]
    assert (
        renderings[0].block_hashes[4] != renderings[1].block_hashes[4]
    )  # the tool call, after 3 tools + system


def test_earlier_turns_thinking_is_dropped_as_the_model_drops_it_whatever_was_taken(twin: str) -> None:
    lists = []
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "start"}]}]
    for i in range(6):
        history.append(
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": f"hmm {i}", "signature": "s"}, _call(i)],
            }
        )
        history.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"}]}
        )
        if i % 2:  # a new turn: the thinking before it leaves the prompt
            history.append({"role": "user", "content": [{"type": "text", "text": f"next {i}"}]})
        lists.append(copy.deepcopy(history))
    assert same_renderings([anthropic(m) for m in lists]) == 5
    assert same_renderings([anthropic(m, model=OPUS) for m in lists]) == 5
    # One model then the other: what one rendered without the thinking the other keeps.
    same_renderings([anthropic(m, model=SONNET if i % 2 else OPUS) for i, m in enumerate(lists)])


def test_interleaved_lineages_a_compaction_and_a_changed_tool_list_render_as_alone(twin: str) -> None:
    main, side = growing(10), growing(4)
    bodies = []
    for i, messages in enumerate(main):
        bodies.append(anthropic(messages))
        if i < len(side):
            bodies.append(anthropic(side[i], system="A subagent."))
    summary = [{"role": "user", "content": [{"type": "text", "text": "This session is continued: summary."}]}]
    bodies.append(anthropic(summary))
    bodies.append(anthropic([*summary, *turn(99)]))
    retooled = anthropic(main[-1])
    retooled["tools"] = [*TOOLS, {"name": "new", "input_schema": {}}]
    bodies.append(retooled)
    bodies.append({**anthropic(main[-1]), "thinking": {"type": "enabled", "budget_tokens": 1024}})
    same_renderings(bodies)


def test_openai_chat_with_leading_system_messages_and_tool_messages_renders_as_alone(twin: str) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You help."},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "start"},
    ]
    bodies = []
    for i in range(8):
        bodies.append(
            {
                "model": "gpt-5",
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "messages": copy.deepcopy(history),
            }
        )
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"})
    # A request whose first messages are all the system tier, then one that is only those.
    bodies.append({"model": "gpt-5", "messages": history[:2]})
    bodies.append({"model": "gpt-5", "messages": [*history[:2], {"role": "system", "content": "late"}]})
    assert same_renderings(bodies, api="chat", provider="openai") == 9


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_two_values_are_shared_exactly_when_they_serialize_alike(a: Any, b: Any) -> None:
    alike = canonical_bytes(a) == canonical_bytes(b)
    assert same_json(a, b) == alike
    if accel.native is not None:
        assert (accel.native.shared_prefix([a], [b]) == 1) == same_json(a, b)
    assert python_shared_prefix([a, 1], [b, 2]) == (1 if same_json(a, b) else 0)


def test_shared_messages_counts_the_leading_messages_alike(twin: str) -> None:
    old = [{"a": 1}, {"b": [1, 2]}, {"c": "x"}]
    assert shared_messages(old, copy.deepcopy(old)) == 3
    assert shared_messages(old, [{"a": 1}, {"b": [1, 2.0]}, {"c": "x"}]) == 1
    assert shared_messages(old, old[:2]) == 2
    assert shared_messages([], old) == 0


def test_the_chain_of_known_block_hashes_is_the_chain_hash_units_gives(twin: str) -> None:
    rendered = render_request("anthropic", "messages", anthropic(growing(5)[-1]))
    # The framing as DESIGN §6.1 spells it: tier, role and message-start bytes, one a unit.
    tiers = bytes({"tools": ord("T"), "system": ord("S"), "messages": ord("M")}[t] for t in rendered.tiers)
    roles = bytes({"user": ord("u"), "assistant": ord("a"), "system": ord("s")}[r] for r in rendered.roles)
    indexes = rendered.message_indexes
    starts = bytes(ord("|") if a != b else ord(".") for a, b in zip(indexes, [-1, *indexes], strict=False))
    header = bytes.fromhex(rendered.header_hash)
    linked = chain_units(rendered.block_hashes, (tiers, roles, starts), header, [])
    plain = python_chain_units(
        bytes.fromhex("".join(rendered.block_hashes)), (tiers, roles, starts), header, []
    )
    assert linked == plain == rendered.prefix_hashes


# --- any sequence of bodies ----------------------------------------------------------------------

block_values = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["a", "b", "é😀", ""])),
    st.builds(
        lambda n: {"type": "tool_use", "id": "t", "name": "x", "input": {"n": n}},
        st.sampled_from([1, 1.0, True, -0.0, 0.0]),
    ),
    st.builds(
        lambda t: {"type": "tool_result", "tool_use_id": "t", "content": t}, st.sampled_from(["r", "s"])
    ),
    st.just(
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image", "source": {"data": "x"}}]}
    ),
    st.just(
        {
            "type": "tool_result",
            "tool_use_id": "t",
            "content": [{"type": "text", "text": "p", "cache_control": MARK}],
        }
    ),
    st.just({"type": "thinking", "thinking": "hm", "signature": "s"}),
    st.just({"type": "redacted_thinking", "data": "x"}),
    st.just({"type": "text", "text": "m", "cache_control": MARK}),
)
chat_messages = st.one_of(
    st.builds(
        lambda r, c: {"role": r, "content": c},
        st.sampled_from(["system", "developer", "user", "assistant"]),
        st.sampled_from(["hi", "yo", None]),
    ),
    st.just({"role": "tool", "tool_call_id": "c", "content": "out"}),
    st.just(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ),
)
anthropic_messages = st.builds(
    lambda r, blocks: {"role": r, "content": blocks},
    st.sampled_from(["user", "assistant"]),
    st.one_of(st.lists(block_values, min_size=0, max_size=3), st.sampled_from(["plain", ""])),
)
edits = st.lists(
    st.tuples(
        st.sampled_from(
            ["append", "append", "append", "edit", "drop", "shrink", "model", "system", "tools", "param"]
        ),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=12,
)


def _bodies(
    api: str, first: list[dict[str, Any]], steps: list[tuple[str, int]], extra: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A session's bodies: each step changes the one before (appends, edits, drops, a compaction,
    another model, system prompt, tool list or a parameter)."""
    model = SONNET if api == "messages" else "gpt-5"
    system: Any = "You help."
    tools: list[Any] = copy.deepcopy(TOOLS)
    messages = copy.deepcopy(first)
    params: dict[str, Any] = {}
    bodies = []
    for (kind, n), message in zip(steps, extra * (len(steps) // max(len(extra), 1) + 1), strict=False):
        if kind == "append":
            messages.append(copy.deepcopy(message))
        elif kind == "edit" and messages:
            messages[n % len(messages)] = copy.deepcopy(message)
        elif kind == "drop" and messages:
            del messages[n % len(messages)]
        elif kind == "shrink":
            messages = messages[: n % 3]
        elif kind == "model":
            model = {"messages": [SONNET, OPUS], "chat": ["gpt-5", "gpt-4o"]}[api][n % 2]
        elif kind == "system":
            system = (
                [{"type": "text", "text": f"sys {n % 3}", **({"cache_control": MARK} if n % 2 else {})}]
                if n % 4
                else f"s{n % 3}"
            )
        elif kind == "tools":
            tools = tools[: n % 4]
        elif kind == "param":
            params = [
                {},
                {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                {"cache_control": MARK},
                {"tool_choice": {"type": "auto"}},
            ][n % 4]
        body: dict[str, Any] = {"model": model, "messages": copy.deepcopy(messages), **params}
        if tools:
            body["tools"] = copy.deepcopy(tools)
        if api == "messages":
            body["system"] = copy.deepcopy(system)
        bodies.append(body)
    return bodies


SESSIONS = {
    "messages": ("anthropic", anthropic_messages),
    "chat": ("openai", chat_messages),
}


@pytest.mark.parametrize("api", list(SESSIONS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_session_renders_in_order_as_each_body_alone(api: str, data: st.DataObject) -> None:
    provider, messages = SESSIONS[api]
    first = data.draw(st.lists(messages, min_size=1, max_size=4))
    extra = data.draw(st.lists(messages, min_size=1, max_size=4))
    bodies = _bodies(api, first, data.draw(edits), extra)
    _differential(api, provider, bodies, data.draw(st.booleans()))


def _differential(api: str, provider: str, bodies: list[dict[str, Any]], plain: bool) -> None:
    """Each body renders through one Renderer as alone, or fails alike; with the C extension or not."""
    native = accel.native
    if plain:
        accel.native = None
    try:
        renderer = Renderer()
        for body in bodies:
            try:
                alone = render_request(provider, api, body)
            except RenderError as error:
                with pytest.raises(RenderError, match=re.escape(str(error))):
                    renderer.render(provider, api, body)
                continue
            in_order = renderer.render(provider, api, body)
            for field in fields(RenderedRequest):
                assert getattr(in_order, field.name) == getattr(alone, field.name), field.name
    finally:
        accel.native = native
