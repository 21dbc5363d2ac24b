"""Canonical rendering of a provider request into content-addressed units (DESIGN §6.1).

A request is flattened in the provider's prefix order — tools, system blocks, message content
blocks — and each unit gets canonical bytes (sorted-key compact JSON without ``cache_control``), a
BLAKE2b block hash, and a prefix hash chained over every earlier unit with the model and the
cache-keying parameters as a header. Two requests share a cached prefix exactly as far as their
prefix-hash lists agree, so a diff never has to look at content that did not change.

The render keeps parallel lists rather than one object per unit: a 6,000-message request has
tens of thousands of units and per-object overhead would dominate the cost of hashing them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from hashlib import blake2b
from itertools import accumulate
from json.encoder import encode_basestring
from typing import Literal

from projections.records import JSON, Usage

Tier = Literal["tools", "system", "messages"]

TIERS: tuple[Tier, ...] = ("tools", "system", "messages")

DIGEST_SIZE = 16
"""Bytes of every BLAKE2b digest: 128 bits is ample for content addressing inside one store."""

IMAGE_TOKEN_ESTIMATE = 1_600
"""A full-size image costs about (width x height) / 750 ≈ 1,600 tokens (Anthropic vision docs);
the base64 length says nothing useful about it, and calibration corrects the total anyway."""

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_ROLE_TAG = {"user": b"u", "assistant": b"a", "system": b"s", "developer": b"d", "tool": b"t"}
_TIER_TAG: dict[str, bytes] = {"tools": b"T", "system": b"S", "messages": b"M"}
_RUN_KINDS = frozenset({"tool_use", "tool_result"})
_TIER_DEPTH: dict[str, int] = {tier: depth for depth, tier in enumerate(TIERS)}


class RenderError(ValueError):
    """A request body that cannot be rendered, naming the field that is wrong."""


@dataclass(frozen=True, slots=True)
class Marker:
    """A cache breakpoint: the unit it sits on and the TTL it asks for."""

    position: int
    ttl: str = "5m"
    automatic: bool = False
    """True for the breakpoint implied by a top-level ``cache_control``."""


@dataclass(frozen=True, slots=True)
class Block:
    """A content-addressed unit as the store keeps it: one copy per distinct hash."""

    hash: str
    kind: str
    canonical: bytes
    chars: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of a rendered request, with its place in the prefix."""

    position: int
    tier: Tier
    role: str
    message_index: int | None
    block_index: int | None
    message_id: str | None
    kind: str
    identity: str
    block_hash: str
    prefix_hash: str
    canonical: bytes
    chars: int
    tokens: int
    raw: JSON


@dataclass(slots=True)
class RenderedRequest:
    """A request flattened into units, held as parallel lists indexed by position."""

    provider: str
    api: str
    model: str
    params: Mapping[str, JSON]
    header_hash: str
    tiers: list[Tier]
    roles: list[str]
    message_indexes: list[int | None]
    block_indexes: list[int | None]
    message_ids: list[str | None]
    kinds: list[str]
    block_hashes: list[str]
    prefix_hashes: list[str]
    canonicals: list[bytes]
    chars: list[int]
    raws: list[JSON]
    lookback_groups: list[int]
    """Lookback position of each unit: a run of adjacent tool_use (or tool_result) units shares one."""
    markers: tuple[Marker, ...]
    warnings: tuple[str, ...]
    tokens: list[int] = field(default_factory=list)
    cum_tokens: list[int] = field(default_factory=list)
    """``cum_tokens[i]`` is the token count of units ``0..i-1``; one longer than the unit list."""
    unattributed_tokens: int = 0
    """Reported prompt tokens no unit accounts for (framing after the last unit)."""

    def __len__(self) -> int:
        return len(self.block_hashes)

    @property
    def units(self) -> list[Unit]:
        """Every unit as an object; built on demand because most callers need only the lists."""
        return [self.unit(i) for i in range(len(self.block_hashes))]

    def unit(self, i: int) -> Unit:
        """The unit at position ``i``."""
        return Unit(
            position=i,
            tier=self.tiers[i],
            role=self.roles[i],
            message_index=self.message_indexes[i],
            block_index=self.block_indexes[i],
            message_id=self.message_ids[i],
            kind=self.kinds[i],
            identity=self.identity(i),
            block_hash=self.block_hashes[i],
            prefix_hash=self.prefix_hashes[i],
            canonical=self.canonicals[i],
            chars=self.chars[i],
            tokens=self.tokens[i],
            raw=self.raws[i],
        )

    def identity(self, i: int) -> str:
        """Where unit ``i`` sits, stable across requests: tool name, system block, message and block."""
        tier = self.tiers[i]
        if tier == "tools":
            return f"tools:{_tool_name(self.raws[i])}"
        mi = self.message_indexes[i]
        if mi is None:
            return f"{tier}:{self.block_indexes[i]}"
        owner = self.message_ids[i] or f"#{mi}"
        return f"{tier}:{owner}.{self.block_indexes[i]}"

    def blocks(self) -> list[Block]:
        """One :class:`Block` per unit, in order (duplicates included; the store dedupes by hash)."""
        return [
            Block(self.block_hashes[i], self.kinds[i], self.canonicals[i], self.chars[i], self.tokens[i])
            for i in range(len(self.block_hashes))
        ]

    def prefix_tokens(self, position: int) -> int:
        """Tokens of the prefix through unit ``position`` inclusive."""
        return self.cum_tokens[position + 1]

    def tier_start(self, tier: Tier) -> int:
        """Position of the first unit of ``tier`` or later; the unit count if there is none."""
        for candidate in TIERS[TIERS.index(tier) :]:
            try:
                return self.tiers.index(candidate)
            except ValueError:
                continue
        return len(self.tiers)

    @property
    def total_tokens(self) -> int:
        """Every prompt token of the request: the units plus what no unit accounts for."""
        return self.cum_tokens[-1] + self.unattributed_tokens


class RenderCache:
    """What rendering already worked out for earlier requests of a conversation.

    Consecutive requests re-send almost every block: the canonical bytes and digest of each text
    block, and each link of the prefix-hash chain, are kept here so the next request computes only
    what is new. Results are identical with or without a cache; it is bounded and starts over when
    full.
    """

    def __init__(self, *, limit: int = 500_000) -> None:
        self.limit = limit
        self.texts: dict[str, tuple[str, bytes, bytes, str]] = {}
        self.links: dict[bytes, tuple[bytes, str]] = {}

    def text_block(self, text: str) -> tuple[str, bytes, bytes, str]:
        """Canonical text, its bytes, digest and hex digest of a ``{"type": "text"}`` block."""
        known = self.texts.get(text)
        if known is None:
            canonical = '{"text":' + encode_basestring(text) + ',"type":"text"}'
            data = canonical.encode("utf-8")
            digest = blake2b(data, digest_size=DIGEST_SIZE).digest()
            known = (canonical, data, digest, digest.hex())
            if len(self.texts) >= self.limit:
                self.texts.clear()
            self.texts[text] = known
        return known

    def link(self, key: bytes) -> tuple[bytes, str]:
        """The next chain value for ``key`` (the chain so far, a digest and the unit's framing)."""
        known = self.links.get(key)
        if known is None:
            chain = blake2b(key, digest_size=DIGEST_SIZE).digest()
            known = (chain, chain.hex())
            if len(self.links) >= self.limit:
                self.links.clear()
            self.links[key] = known
        return known


class _Builder:
    """Accumulates the parallel lists; one method call per unit keeps the hot loop small."""

    def __init__(self, cache: RenderCache | None = None) -> None:
        self.cache = cache
        self.digests: list[bytes] = []
        self.tiers: list[Tier] = []
        self.roles: list[str] = []
        self.message_indexes: list[int | None] = []
        self.block_indexes: list[int | None] = []
        self.message_ids: list[str | None] = []
        self.kinds: list[str] = []
        self.block_hashes: list[str] = []
        self.prefix_hashes: list[str] = []
        self.canonicals: list[bytes] = []
        self.chars: list[int] = []
        self.raws: list[JSON] = []
        self.groups: list[int] = []
        self.markers: list[Marker] = []
        self.images = False
        self.citations = False
        self._group = -1
        self._last_kind = ""

    def add(
        self,
        tier: Tier,
        role: str,
        message_index: int | None,
        block_index: int | None,
        message_id: str | None,
        kind: str,
        raw: JSON,
    ) -> None:
        if self.cache is not None and type(raw) is dict and raw.get("type") == "text" and _plain_text(raw):
            text, data, digest, hex_digest = self.cache.text_block(raw["text"])
        else:
            text = canonical_text(raw)
            data = text.encode("utf-8")
            digest = blake2b(data, digest_size=DIGEST_SIZE).digest()
            hex_digest = digest.hex()
        self.digests.append(digest)
        if kind != self._last_kind or kind not in _RUN_KINDS:
            self._group += 1
            self._last_kind = kind
        self.tiers.append(tier)
        self.roles.append(role)
        self.message_indexes.append(message_index)
        self.block_indexes.append(block_index)
        self.message_ids.append(message_id)
        self.kinds.append(kind)
        self.block_hashes.append(hex_digest)
        self.canonicals.append(data)
        self.chars.append(len(text))
        self.raws.append(raw)
        self.groups.append(self._group)
        if kind == "image":
            self.images = True
        elif kind == "document" and isinstance(raw, dict) and isinstance(raw.get("citations"), dict):
            self.citations = self.citations or bool(raw["citations"].get("enabled"))
        if type(raw) is dict and "cache_control" in raw:
            self.markers.append(Marker(len(self.tiers) - 1, _ttl(raw["cache_control"])))


def _plain_text(raw: Mapping[str, JSON]) -> bool:
    """A text block with nothing but its text (and perhaps a marker): the cacheable common case."""
    keys = len(raw) - ("cache_control" in raw)
    return keys == 2 and isinstance(raw.get("text"), str)


def canonical_text(raw: JSON) -> str:
    """Stable JSON of a unit without ``cache_control``: sorted keys, no whitespace, raw UTF-8."""
    if isinstance(raw, str):
        return encode_basestring(raw)
    if isinstance(raw, dict):
        if "cache_control" in raw:
            raw = {k: v for k, v in raw.items() if k != "cache_control"}
        if len(raw) == 2 and raw.get("type") == "text":
            text = raw.get("text")
            if isinstance(text, str):
                # The most common block by far; building it by hand skips the generic encoder.
                return '{"text":' + encode_basestring(text) + ',"type":"text"}'
        if raw.get("type") == "tool_result" and isinstance(raw.get("content"), list):
            raw = dict(raw)
            raw["content"] = [_without_control(part) for part in raw["content"]]
    return _ENCODER.encode(raw)


def block_hash(raw: JSON) -> str:
    """BLAKE2b-128 (hex) of a unit's canonical bytes."""
    return blake2b(canonical_text(raw).encode("utf-8"), digest_size=DIGEST_SIZE).hexdigest()


def _without_control(part: JSON) -> JSON:
    if isinstance(part, dict) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def _ttl(control: JSON) -> str:
    if isinstance(control, dict) and control.get("ttl") == "1h":
        return "1h"
    return "5m"


def _kind(block: JSON) -> str:
    if isinstance(block, str):
        return "text"
    if isinstance(block, dict):
        kind = block.get("type")
        if kind in ("redacted_thinking", "reasoning"):
            return "thinking"
        if kind in ("input_text", "output_text"):
            return "text"
        if kind in ("input_image", "image_url"):
            return "image"
        if kind in ("function_call", "custom_tool_call"):
            return "tool_use"
        if kind in ("function_call_output", "custom_tool_call_output"):
            return "tool_result"
        if isinstance(kind, str):
            return kind
    return "other"


def _tool_name(tool: JSON) -> str:
    if isinstance(tool, dict):
        name = tool.get("name")
        if isinstance(name, str):
            return name
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(tool.get("type"), str):
            return str(tool["type"])
    return "?"


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
    cache: RenderCache | None = None,
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
    builder = _Builder(cache)
    if api == "messages":
        _render_anthropic(builder, body)
    elif api == "chat":
        _render_chat(builder, body)
    elif api == "responses":
        _render_responses(builder, body)
    else:
        raise RenderError(f"request body: unknown api {api!r} (expected messages, chat or responses)")
    warnings: list[str] = []
    top = body.get("cache_control")
    if top is not None and builder.tiers:
        builder.markers.append(Marker(len(builder.tiers) - 1, _ttl(top), automatic=True))
    if len(builder.markers) > 4:
        warnings.append(f"marker-limit: {len(builder.markers)} cache breakpoints, the provider accepts 4")
    if builder.images:
        params["images"] = True
    if builder.citations:
        params["citations"] = True
    header_params, tier_params = scoped_params(provider, params)
    header = blake2b(
        _ENCODER.encode({"model": model, "params": header_params}).encode("utf-8"), digest_size=DIGEST_SIZE
    )
    _chain(builder, header.digest(), tier_params, cache)
    rendered = RenderedRequest(
        provider=provider,
        api=api,
        model=model,
        params=params,
        header_hash=header.hexdigest(),
        tiers=builder.tiers,
        roles=builder.roles,
        message_indexes=builder.message_indexes,
        block_indexes=builder.block_indexes,
        message_ids=builder.message_ids,
        kinds=builder.kinds,
        block_hashes=builder.block_hashes,
        prefix_hashes=builder.prefix_hashes,
        canonicals=builder.canonicals,
        chars=builder.chars,
        raws=builder.raws,
        lookback_groups=builder.groups,
        markers=tuple(builder.markers),
        warnings=tuple(warnings),
    )
    calibrate(rendered, usage)
    return rendered


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


def _chain(
    builder: _Builder,
    header: bytes,
    tier_params: Mapping[Tier, Mapping[str, JSON]],
    cache: RenderCache | None = None,
) -> None:
    """Chain the prefix hashes: each unit's hash covers every earlier unit, its framing (tier, role,
    message boundary) and the parameters whose scope starts at or before its tier."""
    scoped = {
        tier: blake2b(
            _ENCODER.encode(dict(tier_params[tier])).encode("utf-8"), digest_size=DIGEST_SIZE
        ).digest()
        for tier in TIERS
        if tier_params.get(tier)
    }
    chain = header
    entered = 0  # index in TIERS of the deepest tier whose parameters have joined the chain
    last_message: int | None = -1
    prefixes: list[str] = []
    tiers, roles, messages = builder.tiers, builder.roles, builder.message_indexes
    for i, digest in enumerate(builder.digests):
        tier = tiers[i]
        depth = _TIER_DEPTH[tier]
        while entered < depth:
            entered += 1
            if TIERS[entered] in scoped:
                chain = blake2b(chain + scoped[TIERS[entered]], digest_size=DIGEST_SIZE).digest()
        # The role and the start of a new message are part of what the model sees, so they join
        # the chain even though the block hash (content address) leaves them out.
        message = messages[i]
        boundary = b"|" if message != last_message else b"."
        last_message = message
        key = chain + digest + _TIER_TAG[tier] + _ROLE_TAG.get(roles[i], b"?") + boundary
        if cache is None:
            chain = blake2b(key, digest_size=DIGEST_SIZE).digest()
            prefixes.append(chain.hex())
        else:
            chain, hex_chain = cache.link(key)
            prefixes.append(hex_chain)
    builder.prefix_hashes = prefixes


def _render_anthropic(builder: _Builder, body: Mapping[str, JSON]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RenderError("request body: field 'tools' is not a list")
    for i, tool in enumerate(tools):
        builder.add("tools", "system", None, i, None, "tool", tool)
    system = body.get("system")
    if isinstance(system, str):
        builder.add("system", "system", None, 0, None, "system", system)
    elif isinstance(system, list):
        for i, block in enumerate(system):
            builder.add("system", "system", None, i, None, "system", block)
    elif system is not None:
        raise RenderError("request body: field 'system' is neither a string nor a list")
    _render_messages(builder, body.get("messages"), leading_system=False)


def _render_messages(builder: _Builder, messages: JSON, *, leading_system: bool) -> None:
    if not isinstance(messages, list):
        raise RenderError("request body: field 'messages' is missing or not a list")
    head = leading_system
    for mi, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RenderError(f"request body: messages[{mi}] is not an object")
        role = str(message.get("role", "?"))
        head = head and role in ("system", "developer")
        tier: Tier = "system" if head else "messages"
        mid = _message_id(message)
        content = message.get("content")
        bi = 0
        if role == "tool":
            raw = {"type": "tool_result", "tool_call_id": message.get("tool_call_id"), "content": content}
            builder.add(tier, role, mi, 0, mid, "tool_result", raw)
            continue
        if isinstance(content, str):
            builder.add(tier, role, mi, 0, mid, "text", content)
            bi = 1
        elif isinstance(content, list):
            for bi, block in enumerate(content):
                builder.add(tier, role, mi, bi, mid, _kind(block), block)
            bi = len(content)
        elif content is not None:
            raise RenderError(f"request body: messages[{mi}].content is neither a string nor a list")
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                builder.add(tier, role, mi, bi, mid, "tool_use", call)
                bi += 1


def _render_chat(builder: _Builder, body: Mapping[str, JSON]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RenderError("request body: field 'tools' is not a list")
    for i, tool in enumerate(tools):
        builder.add("tools", "system", None, i, None, "tool", tool)
    _render_messages(builder, body.get("messages"), leading_system=True)


def _render_responses(builder: _Builder, body: Mapping[str, JSON]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RenderError("request body: field 'tools' is not a list")
    for i, tool in enumerate(tools):
        builder.add("tools", "system", None, i, None, "tool", tool)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        builder.add("system", "system", None, 0, None, "system", instructions)
    items = body.get("input")
    if isinstance(items, str):
        builder.add("messages", "user", 0, 0, None, "text", items)
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
            tier: Tier = "system" if head else "messages"
            content = item.get("content")
            if isinstance(content, str):
                builder.add(tier, role, mi, 0, mid, "text", content)
            elif isinstance(content, list):
                for bi, block in enumerate(content):
                    builder.add(tier, role, mi, bi, mid, _kind(block), block)
            continue
        head = False
        kind = _kind(item)
        role = "tool" if kind == "tool_result" else "assistant"
        builder.add("messages", role, mi, 0, mid, kind, item)


def token_estimates(rendered: RenderedRequest) -> list[float]:
    """Uncalibrated token estimates: characters ÷ 4, and a flat figure per image."""
    image = float(IMAGE_TOKEN_ESTIMATE)
    kinds, chars = rendered.kinds, rendered.chars
    return [image if kinds[i] == "image" else chars[i] / 4 for i in range(len(kinds))]


def calibrate(rendered: RenderedRequest, usage: Usage | None) -> None:
    """Set integer token counts: characters ÷ 4, scaled so the units sum to the reported total.

    For Anthropic usage the prefix through the last breakpoint is known exactly (read + write), so
    the units up to it are scaled to that figure and the rest to the uncached remainder: a prefix
    written by one request is then read back by the next at the very figure the provider reports.
    """
    estimates = token_estimates(rendered)
    n = len(estimates)
    scaled = list(estimates)
    total = usage.prompt_total if usage is not None else None
    unattributed = 0
    if total is not None and n:
        anchor = _anchor(rendered, usage) if usage is not None else None
        if anchor is not None:
            position, through = anchor
            head = sum(estimates[: position + 1])
            tail = sum(estimates[position + 1 :])
            rest = total - through
            _scale(scaled, 0, position + 1, head, through)
            if tail > 0:
                _scale(scaled, position + 1, n, tail, rest)
            else:
                unattributed = rest
        else:
            whole = sum(estimates)
            if whole > 0:
                _scale(scaled, 0, n, whole, total)
            else:
                unattributed = total
    cum = [0]
    cum.extend(round(x) for x in accumulate(scaled))
    rendered.cum_tokens = cum
    rendered.tokens = [cum[i + 1] - cum[i] for i in range(n)]
    rendered.unattributed_tokens = unattributed


def _anchor(rendered: RenderedRequest, usage: Usage) -> tuple[int, int] | None:
    if usage.convention not in ("anthropic", "dsh") or not rendered.markers:
        return None
    through = (usage.cache_read or 0) + (usage.cache_write or 0)
    if through <= 0 or usage.prompt_total is None or through > usage.prompt_total:
        return None
    return max(m.position for m in rendered.markers), through


def _scale(values: list[float], start: int, end: int, current: float, target: float) -> None:
    if current <= 0:
        return
    factor = target / current
    for i in range(start, end):
        values[i] *= factor
