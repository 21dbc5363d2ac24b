"""Canonical rendering of a provider request into content-addressed units (DESIGN §6.1).

A request is flattened in the provider's prefix order — tools, system blocks, message content
blocks — and each unit gets canonical bytes (sorted-key compact JSON without ``cache_control``), a
BLAKE2b block hash, and a prefix hash chained over every earlier unit with the model and the
cache-keying parameters as a header. Two requests share a cached prefix exactly as far as their
prefix-hash lists agree, so a diff never has to look at content that did not change.

The render keeps parallel lists rather than one object per unit, and serializes and hashes all
units in one pass (``canonical.hash_units``): a 6,000-message request has thousands of units, and
per-unit interpreter work would otherwise dominate the cost of hashing their bytes. Every rule of
what a unit is lives in Python only, here and in :mod:`projections.cache.render.units` (the lists,
kinds and markers); the C extension (:mod:`projections.cache.render.accel`) does nothing but hash the bytes
it is handed. The parameters that key the cache besides the prompt are
:mod:`projections.cache.render.cache_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from projections.cache.render.cache_keys import (
    cache_params,
    citations_enabled,
    images_present,
    keying_params,
    scoped_params,
    tier_mixes,
)
from projections.cache.render.calibration import calibrate
from projections.cache.render.canonical import canonical_bytes, digest, hash_units
from projections.cache.render.rendered_request import Marker, RenderedRequest, Tier
from projections.cache.render.units import Units, block_kind
from projections.normalized import JSON, Usage
from projections.providers.rules import keeps_only_last_turn_thinking

_RUN_KINDS = frozenset({"tool_use", "tool_result"})


class RenderError(ValueError):
    """A request body that cannot be rendered, naming the field that is wrong."""


def _lookback_groups(kinds: list[str]) -> list[int]:
    """Each unit's lookback position: a run of adjacent tool_use (or tool_result) units shares one.

    Anthropic's prompt-caching guide (platform.claude.com/docs/en/build-with-claude/prompt-caching,
    checked 2026-12-03, as quoted by two independent 2026 readings of it): "The lookback window is
    20 blocks … a run of consecutive tool_use blocks counts as one position, and so does a run of
    consecutive tool_result blocks", the breakpoint itself being the first of the 20. So N parallel
    tool calls and their N results take two positions, not 2N. A unit opens a position when its
    kind differs from the previous unit's or is not a run kind; the position is the count of
    openings so far, minus one.
    """
    groups: list[int] = []
    group, previous = -1, ""
    for kind in kinds:
        if kind != previous or kind not in _RUN_KINDS:
            group += 1
        previous = kind
        groups.append(group)
    return groups


def _ttl(control: JSON) -> str:
    """The lifetime an Anthropic ``cache_control`` asks for: ``1h``, or the default ``5m``."""
    if isinstance(control, dict) and control.get("ttl") == "1h":
        return "1h"
    return "5m"


_OPENAI_TTLS = frozenset({"30m", "12h"})
"""Lifetimes an OpenAI breakpoint may name: ``30m`` (the default) and Azure's ``12h``."""


def _marker_ttl(raw: JSON, request_ttl: str) -> str:
    """The lifetime of the breakpoint on unit ``raw``: its ``cache_control`` ttl, or an OpenAI
    ``prompt_cache_breakpoint``'s own ``ttl``, else the request's ``prompt_cache_options.ttl``."""
    assert isinstance(raw, dict)
    if "cache_control" in raw:
        return _ttl(raw["cache_control"])
    control = raw["prompt_cache_breakpoint"]
    ttl = control.get("ttl") if isinstance(control, dict) else None
    return ttl if isinstance(ttl, str) and ttl in _OPENAI_TTLS else request_ttl


def _message_id(message: Mapping[str, JSON]) -> str | None:
    value = message.get("id")
    return value if isinstance(value, str) else None


def render_request(
    provider: str,
    api: str,
    body: Mapping[str, JSON],
    *,
    usage: Usage | None = None,
) -> RenderedRequest:
    """Flatten a request body as sent into hashed units, markers and token estimates.

    ``api`` is ``messages`` (Anthropic), ``chat`` (OpenAI Chat Completions and compatible
    providers) or ``responses`` (OpenAI Responses). With ``usage``, token estimates are calibrated
    so the units sum to the reported prompt total.
    """
    if not isinstance(body, Mapping):
        raise RenderError(f"request body: expected an object, got {type(body).__name__}")
    model = body.get("model")
    if not isinstance(model, str):
        raise RenderError("request body: field 'model' is missing or not a string")
    params = cache_params(provider, api, body)
    units = Units()
    if api == "messages":
        _render_anthropic(units, body)
    elif api == "chat":
        _render_chat(units, body)
    elif api == "responses":
        _render_responses(units, body)
    else:
        raise RenderError(f"request body: unknown api {api!r} (expected messages, chat or responses)")
    units.finish()
    kinds = units.kinds
    request_ttl = _request_ttl(body)
    markers = [Marker(position, _marker_ttl(units.raws[position], request_ttl)) for position in units.marked]
    top = body.get("cache_control")
    cacheable = last_cacheable(units.raws, kinds)
    if top is not None and cacheable is not None:
        markers.append(Marker(cacheable, _ttl(top), automatic=True))
    warnings: list[str] = []
    if len(markers) > 4:
        warnings.append(f"marker-limit: {len(markers)} cache breakpoints, the provider accepts 4")
    if images_present(units.raws, kinds):
        params["images"] = True
    if "document" in kinds and citations_enabled(units.raws, kinds):
        params["citations"] = True
    header_params, tier_params = scoped_params(provider, keying_params(params, model))
    header = digest(canonical_bytes({"model": model, "params": header_params}))
    chars, block_hashes, prefix_hashes = hash_units(
        units.stripped(), units.framing(), header, tier_mixes(units.tiers, tier_params)
    )
    rendered = RenderedRequest(
        provider=provider,
        api=api,
        model=model,
        params=params,
        header_hash=header.hex(),
        tiers=units.tiers,
        roles=units.roles,
        message_indexes=units.message_indexes,
        block_indexes=units.block_indexes,
        message_ids=units.message_ids,
        kinds=kinds,
        block_hashes=block_hashes,
        prefix_hashes=prefix_hashes,
        chars=chars,
        raws=units.raws,
        lookback_groups=_lookback_groups(kinds),
        markers=tuple(markers),
        warnings=tuple(warnings),
    )
    calibrate(rendered, usage)
    return rendered


def _request_ttl(body: Mapping[str, JSON]) -> str:
    """The lifetime an OpenAI breakpoint without its own ``ttl`` inherits: ``prompt_cache_options.ttl``,
    ``30m`` by default (``prompt_cache_options`` reference, checked 2026-12-03)."""
    options = body.get("prompt_cache_options")
    ttl = options.get("ttl") if isinstance(options, dict) else None
    return ttl if isinstance(ttl, str) and ttl in _OPENAI_TTLS else "30m"


_UNCACHEABLE_KINDS = frozenset({"thinking"})


def last_cacheable(raws: Sequence[JSON], kinds: Sequence[str]) -> int | None:
    """Where a top-level ``cache_control`` puts its breakpoint: the last block that can carry one.

    Anthropic's prompt-caching guide (platform.claude.com/docs/en/build-with-claude/prompt-caching,
    checked 2026-12-03): automatic caching "applies the cache breakpoint to the last cacheable
    block"; thinking blocks "cannot be cached directly" and empty text blocks cannot be cached. So
    the breakpoint skips a trailing thinking block (and an empty text block) and lands before it.
    """
    for position in range(len(kinds) - 1, -1, -1):
        if kinds[position] in _UNCACHEABLE_KINDS or _empty_text(raws[position]):
            continue
        return position
    return None


def _empty_text(raw: JSON) -> bool:
    if isinstance(raw, str):
        return raw == ""
    return isinstance(raw, dict) and raw.get("type") == "text" and raw.get("text") == ""


def _render_tools(units: Units, body: Mapping[str, JSON]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RenderError("request body: field 'tools' is not a list")
    units.add("tools", "system", None, None, tools, kind="tool")


def _render_anthropic(units: Units, body: Mapping[str, JSON]) -> None:
    _render_tools(units, body)
    system = body.get("system")
    if isinstance(system, str):
        units.add("system", "system", None, None, [system], kind="system")
    elif isinstance(system, list):
        units.add("system", "system", None, None, system, kind="system")
    elif system is not None:
        raise RenderError("request body: field 'system' is neither a string nor a list")
    messages = body.get("messages")
    model = body.get("model")
    # Render the messages as sent, and render them again without the earlier turns' thinking only
    # when the model drops it and a message can hold some: a thinking unit, or the blocks a tool
    # message wraps into one unit. Looking through every block of every message first cost more
    # than rendering them, and most requests have no thinking to drop.
    start = units.position()
    _render_messages(units, messages, leading_system=False)
    if isinstance(model, str) and keeps_only_last_turn_thinking(model):
        units.finish()
        if "thinking" in units.kinds[start:] or "tool" in units.roles[start:]:
            assert isinstance(messages, list)  # _render_messages refuses anything else
            units.rewind(start)
            _render_messages(units, without_earlier_thinking(messages), leading_system=False)


def without_earlier_thinking(messages: list[JSON]) -> list[JSON]:
    """The messages as a model that keeps only the last assistant turn's thinking reads them.

    The extended-thinking guide (platform.claude.com/docs/en/build-with-claude/extended-thinking,
    checked 2026-12-03): Opus 4.1 and earlier, Sonnet 4.5 and earlier and every Haiku through 4.5
    "keep only the last assistant turn's thinking"; the API strips the thinking blocks of earlier
    turns itself, so they are no part of the prompt or of its cached prefix. A turn ends at a user
    message that is not only tool results: thinking before the last such message is dropped, the
    thinking of the tool loop after it is kept. Newer models keep every thinking block.
    """
    # The last message that opens a turn, searched from the end where it sits.
    last_turn = next((i for i in range(len(messages) - 1, -1, -1) if _opens_turn(messages[i])), -1)
    kept: list[JSON] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if (
            index < last_turn
            and isinstance(content, list)
            and any(block_kind(b) == "thinking" for b in content)
        ):
            assert isinstance(message, dict)
            message = {**message, "content": [b for b in content if block_kind(b) != "thinking"]}
        kept.append(message)
    return kept


def _opens_turn(message: JSON) -> bool:
    """A user message with something besides tool results: the start of a new assistant turn."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return True
    return any(block_kind(block) != "tool_result" for block in content)


def _render_messages(units: Units, messages: JSON, *, leading_system: bool) -> None:
    if not isinstance(messages, list):
        raise RenderError("request body: field 'messages' is missing or not a list")
    _add_messages(units, messages, leading_system=leading_system)


def _add_messages(units: Units, messages: list[JSON], *, leading_system: bool) -> None:
    """Append every unit of a message list (Anthropic Messages or OpenAI Chat).

    This loop runs once a message, thousands of times a request: the common message, a list of one
    block, is appended here directly, as :meth:`Units.add` would append it, and the id test of
    :func:`_message_id` is spelled inline, since a Python call per message cost a fifth of the loop.
    """
    head = leading_system
    add = units.add
    append_raw, append_tier, append_role = units.raws.append, units.tiers.append, units.roles.append
    append_index, append_id = units.message_indexes.append, units.message_ids.append
    append_block = units.block_indexes.append
    for mi, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RenderError(f"request body: messages[{mi}] is not an object")
        role = str(message.get("role", "?"))
        head = head and role in ("system", "developer")
        tier: Tier = "system" if head else "messages"
        mid = message.get("id")
        if not isinstance(mid, str):
            mid = None
        content = message.get("content")
        if role == "tool":
            raw = {"type": "tool_result", "tool_call_id": message.get("tool_call_id"), "content": content}
            add(tier, role, mi, mid, [raw])
            continue
        if isinstance(content, list):
            blocks = len(content)
            if blocks == 1:
                append_raw(content[0])
                append_tier(tier)
                append_role(role)
                append_index(mi)
                append_id(mid)
                append_block(0)
            else:
                add(tier, role, mi, mid, content)
        elif isinstance(content, str):
            add(tier, role, mi, mid, [content])
            blocks = 1
        elif content is None:
            blocks = 0
        else:
            raise RenderError(f"request body: messages[{mi}].content is neither a string nor a list")
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            add(tier, role, mi, mid, calls, kind="tool_use", first_block=blocks)


def _render_chat(units: Units, body: Mapping[str, JSON]) -> None:
    _render_tools(units, body)
    _render_messages(units, body.get("messages"), leading_system=True)


def _render_responses(units: Units, body: Mapping[str, JSON]) -> None:
    _render_tools(units, body)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        units.add("system", "system", None, None, [instructions], kind="system")
    items = body.get("input")
    if isinstance(items, str):
        units.add("messages", "user", 0, None, [items])
        return
    if not isinstance(items, list):
        raise RenderError("request body: field 'input' is neither a string nor a list")
    head = True
    for mi, item in enumerate(items):
        if not isinstance(item, dict):
            raise RenderError(f"request body: input[{mi}] is not an object")
        mid = _message_id(item)
        if "role" in item and item.get("type", "message") == "message":
            role = str(item["role"])
            head = head and role in ("system", "developer")
            content = item.get("content")
            tier: Tier = "system" if head else "messages"
            if isinstance(content, str):
                units.add(tier, role, mi, mid, [content])
            elif isinstance(content, list):
                units.add(tier, role, mi, mid, content)
            continue
        head = False
        role = "tool" if block_kind(item) == "tool_result" else "assistant"
        units.add("messages", role, mi, mid, [item])
