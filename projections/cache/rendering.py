"""Canonical rendering of a provider request into content-addressed units (DESIGN §6.1).

A request is flattened in the provider's prefix order — tools, system blocks, message content
blocks — and each unit gets canonical bytes (sorted-key compact JSON without ``cache_control``), a
BLAKE2b block hash, and a prefix hash chained over every earlier unit with the model and the
cache-keying parameters as a header. Two requests share a cached prefix exactly as far as their
prefix-hash lists agree, so a diff never has to look at content that did not change.

The render keeps parallel lists rather than one object per unit, and serializes and hashes all
units in one pass (``canonical.hash_units``): a 6,000-message request has thousands of units, and
per-unit interpreter work would otherwise dominate the cost of hashing their bytes. Every rule of
what a unit is lives here, in Python only; the C extension (:mod:`projections.cache.accel`) does
nothing but hash the bytes it is handed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from projections.cache.calibration import calibrate
from projections.cache.canonical import canonical_bytes, digest, hash_units, without_control
from projections.cache.rendered_request import TIERS, Marker, RenderedRequest, Tier, tier_start
from projections.normalized import JSON, Usage

_ROLE_TAG = {
    "user": ord("u"),
    "assistant": ord("a"),
    "system": ord("s"),
    "developer": ord("d"),
    "tool": ord("t"),
}
_UNKNOWN_ROLE = ord("?")
_TIER_TAG = {"tools": ord("T"), "system": ord("S"), "messages": ord("M")}
_BOUNDARY = {True: ord("|"), False: ord(".")}
"""A unit that starts a new message links with ``|``, a later block of the same message with ``.``."""
_RUN_KINDS = frozenset({"tool_use", "tool_result"})


class RenderError(ValueError):
    """A request body that cannot be rendered, naming the field that is wrong."""


_KIND_ALIASES: dict[str, str] = {
    "redacted_thinking": "thinking",
    "reasoning": "thinking",
    "input_text": "text",
    "output_text": "text",
    "input_image": "image",
    "image_url": "image",
    "function_call": "tool_use",
    "custom_tool_call": "tool_use",
    "function_call_output": "tool_result",
    "custom_tool_call_output": "tool_result",
}


def _kind(block: JSON) -> str:
    if isinstance(block, str):
        return "text"
    if isinstance(block, dict):
        kind = block.get("type")
        if isinstance(kind, str):
            return _KIND_ALIASES.get(kind, kind)
    return "other"


class _Units:
    """The units of a request in prefix order, as the parallel per-unit lists of a rendering.

    Units are added a message at a time (or the tool list, or the system prompt at once): the units
    of one call share a tier, role, message index and id.
    """

    def __init__(self) -> None:
        self.raws: list[JSON] = []
        self.tiers: list[Tier] = []
        self.roles: list[str] = []
        self.message_indexes: list[int | None] = []
        self.block_indexes: list[int | None] = []
        self.message_ids: list[str | None] = []
        self.kinds: list[str] = []
        self.marked: list[int] = []
        """Positions of the units that carry a ``cache_control`` marker."""
        self.nested: list[int] = []
        """Positions of the tool results whose parts carry a marker."""
        # One byte per unit each: what joins its link of the chain besides the block. Kept as the
        # units are added, where deriving them from the lists afterwards would cost another pass
        # over every unit.
        self.tier_tags = bytearray()
        self.role_tags = bytearray()
        self.starts = bytearray()

    def add(
        self,
        tier: Tier,
        role: str,
        message_index: int | None,
        message_id: str | None,
        blocks: Sequence[JSON],
        *,
        kind: str | None = None,
        first_block: int = 0,
    ) -> None:
        """Append ``blocks``; ``kind`` names them all when their place decides it."""
        previous = self.message_indexes[-1] if self.message_indexes else -1
        # The role and the start of a new message are part of what the model sees, so they join the
        # chain even though the block hash (content address) leaves them out. The blocks of one call
        # are one message: only the first can start a new one.
        tier_tag = _TIER_TAG[tier]
        role_tag = _ROLE_TAG.get(role, _UNKNOWN_ROLE)
        start = _BOUNDARY[message_index != previous]
        for offset, block in enumerate(blocks):
            position = len(self.raws)
            unit_kind = kind or _kind(block)
            self.raws.append(block)
            self.tiers.append(tier)
            self.roles.append(role)
            self.message_indexes.append(message_index)
            self.block_indexes.append(first_block + offset)
            self.message_ids.append(message_id)
            self.kinds.append(unit_kind)
            if _marked(block):
                self.marked.append(position)
            if unit_kind == "tool_result" and _has_nested_control(block):
                self.nested.append(position)
            self.tier_tags.append(tier_tag)
            self.role_tags.append(role_tag)
            self.starts.append(start)
            start = _BOUNDARY[False]

    def controls(self) -> list[tuple[int, JSON]]:
        """(position, ``cache_control``) of each unit that carries a marker, in order."""
        return [(p, _control(self.raws[p])) for p in self.marked]

    def stripped(self) -> list[JSON]:
        """The units as the cache keys them: markers removed, also from a tool result's parts."""
        if not self.marked and not self.nested:
            return self.raws
        raws = list(self.raws)
        for p in (*self.marked, *self.nested):
            raws[p] = without_control(raws[p])
        return raws

    def framing(self) -> tuple[bytes, bytes, bytes]:
        """Tier, role and message-start bytes, one per unit each."""
        return bytes(self.tier_tags), bytes(self.role_tags), bytes(self.starts)


def _control(raw: JSON) -> JSON:
    assert isinstance(raw, dict)
    return raw["cache_control"]


def _marked(raw: JSON) -> bool:
    return type(raw) is dict and "cache_control" in raw


def _has_nested_control(block: JSON) -> bool:
    if not isinstance(block, dict) or "cache_control" in block:
        return False  # a marked unit is stripped whole
    content = block.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content)


def _lookback_groups(kinds: list[str]) -> list[int]:
    """Each unit's lookback position: a run of adjacent tool_use (or tool_result) units shares one.

    A unit opens a position when its kind differs from the previous unit's or is not a run kind;
    the position is the count of openings so far, minus one.
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
    if isinstance(control, dict) and control.get("ttl") == "1h":
        return "1h"
    return "5m"


def _message_id(message: Mapping[str, JSON]) -> str | None:
    value = message.get("id")
    return value if isinstance(value, str) else None


def cache_params(provider: str, api: str, body: Mapping[str, JSON]) -> dict[str, JSON]:
    """The request parameters that key the provider's cache besides the prompt itself (DESIGN §7)."""
    keys = ("tool_choice", "thinking", "effort", "reasoning", "reasoning_effort", "prompt_cache_key")
    params: dict[str, JSON] = {key: body[key] for key in keys if body.get(key) is not None}
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and output_config.get("effort") is not None:
        params["effort"] = output_config["effort"]
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(t, dict) and str(t.get("type", "")).startswith("web_search") for t in tools
    ):
        params["web_search"] = True
    return params


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
    units = _Units()
    if api == "messages":
        _render_anthropic(units, body)
    elif api == "chat":
        _render_chat(units, body)
    elif api == "responses":
        _render_responses(units, body)
    else:
        raise RenderError(f"request body: unknown api {api!r} (expected messages, chat or responses)")
    kinds = units.kinds
    controls = units.controls()
    markers = [Marker(position, _ttl(control)) for position, control in controls]
    top = body.get("cache_control")
    if top is not None and kinds:
        markers.append(Marker(len(kinds) - 1, _ttl(top), automatic=True))
    warnings: list[str] = []
    if len(markers) > 4:
        warnings.append(f"marker-limit: {len(markers)} cache breakpoints, the provider accepts 4")
    if "image" in kinds:
        params["images"] = True
    if "document" in kinds and _citations_enabled(units.raws, kinds):
        params["citations"] = True
    header_params, tier_params = scoped_params(provider, params)
    header = digest(canonical_bytes({"model": model, "params": header_params}))
    chars, block_hashes, prefix_hashes = hash_units(
        units.stripped(), units.framing(), header, _tier_mixes(units.tiers, tier_params)
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


def _citations_enabled(raws: list[JSON], kinds: list[str]) -> bool:
    return any(
        kind == "document"
        and isinstance(raw, dict)
        and isinstance(raw.get("citations"), dict)
        and bool(raw["citations"].get("enabled"))
        for raw, kind in zip(raws, kinds, strict=True)
    )


ANTHROPIC_TIER_PARAMS: Mapping[str, Tier] = {
    # Anthropic's prompt-caching guide, "What invalidates the cache" (read 2026-12-02,
    # https://platform.claude.com/docs/en/build-with-claude/prompt-caching): toggling web search or
    # citations invalidates the system and messages caches; changing tool_choice, images present or
    # the thinking parameters invalidates the messages cache only. Tools survive all of them.
    "web_search": "system",
    "citations": "system",
    "tool_choice": "messages",
    "images": "messages",
    "thinking": "messages",
    "effort": "messages",
}


def scoped_params(
    provider: str, params: Mapping[str, JSON]
) -> tuple[dict[str, JSON], dict[Tier, dict[str, JSON]]]:
    """Split cache-keying parameters into those that re-key the whole prompt and those that re-key
    only a tier and what follows it. Automatic caches (OpenAI and others) key on all of them at once."""
    if provider != "anthropic":
        return dict(params), {}
    header: dict[str, JSON] = {}
    tiers: dict[Tier, dict[str, JSON]] = {}
    for key, value in params.items():
        tier = ANTHROPIC_TIER_PARAMS.get(key)
        if tier is None:
            header[key] = value
        else:
            tiers.setdefault(tier, {})[key] = value
    return header, tiers


def _tier_mixes(tiers: list[Tier], tier_params: Mapping[Tier, Mapping[str, JSON]]) -> list[tuple[int, bytes]]:
    """Where the tier-scoped parameters join the chain: before the first unit of their tier or a later
    one, so a parameter that re-keys the messages leaves the tools' and system's prefix hashes alone."""
    mixes: dict[int, bytes] = {}
    for tier in TIERS[1:]:
        params = tier_params.get(tier)
        position = tier_start(tiers, tier)
        if params and position < len(tiers):
            mixes[position] = mixes.get(position, b"") + digest(canonical_bytes(dict(params)))
    return sorted(mixes.items())


def _render_tools(units: _Units, body: Mapping[str, JSON]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RenderError("request body: field 'tools' is not a list")
    units.add("tools", "system", None, None, tools, kind="tool")


def _render_anthropic(units: _Units, body: Mapping[str, JSON]) -> None:
    _render_tools(units, body)
    system = body.get("system")
    if isinstance(system, str):
        units.add("system", "system", None, None, [system], kind="system")
    elif isinstance(system, list):
        units.add("system", "system", None, None, system, kind="system")
    elif system is not None:
        raise RenderError("request body: field 'system' is neither a string nor a list")
    _render_messages(units, body.get("messages"), leading_system=False)


def _render_messages(units: _Units, messages: JSON, *, leading_system: bool) -> None:
    if not isinstance(messages, list):
        raise RenderError("request body: field 'messages' is missing or not a list")
    _add_messages(units, messages, leading_system=leading_system)


def _add_messages(units: _Units, messages: list[JSON], *, leading_system: bool) -> None:
    """Append every unit of a message list (Anthropic Messages or OpenAI Chat)."""
    head = leading_system
    add = units.add
    for mi, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RenderError(f"request body: messages[{mi}] is not an object")
        role = str(message.get("role", "?"))
        head = head and role in ("system", "developer")
        tier: Tier = "system" if head else "messages"
        mid = _message_id(message)
        content = message.get("content")
        if role == "tool":
            raw = {"type": "tool_result", "tool_call_id": message.get("tool_call_id"), "content": content}
            add(tier, role, mi, mid, [raw])
            continue
        if isinstance(content, str):
            add(tier, role, mi, mid, [content])
            blocks = 1
        elif isinstance(content, list):
            add(tier, role, mi, mid, content)
            blocks = len(content)
        elif content is None:
            blocks = 0
        else:
            raise RenderError(f"request body: messages[{mi}].content is neither a string nor a list")
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            add(tier, role, mi, mid, calls, kind="tool_use", first_block=blocks)


def _render_chat(units: _Units, body: Mapping[str, JSON]) -> None:
    _render_tools(units, body)
    _render_messages(units, body.get("messages"), leading_system=True)


def _render_responses(units: _Units, body: Mapping[str, JSON]) -> None:
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
        role = "tool" if _kind(item) == "tool_result" else "assistant"
        units.add("messages", role, mi, mid, [item])
