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
from itertools import compress, count, repeat
from operator import eq, ne

from projections.cache.calibration import calibrate
from projections.cache.canonical import MARKER_KEYS, canonical_bytes, digest, hash_units, without_control
from projections.cache.rendered_request import TIERS, Marker, RenderedRequest, Tier, tier_start
from projections.normalized import JSON, Usage
from projections.provider_rules import keeps_only_last_turn_thinking

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


def _kind(block: JSON, given: str | None = None) -> str:
    """A unit's kind: ``given`` when its place decides it, else from the block itself."""
    if given is not None:
        return given
    if isinstance(block, str):
        return "text"
    if isinstance(block, dict):
        kind = block.get("type")
        if isinstance(kind, str):
            return _KIND_ALIASES.get(kind, kind)
    return "other"


class _Units:
    """The units of a request in prefix order, as the parallel per-unit lists of a rendering.

    Units are added a call at a time (a message's content, its tool calls, the tool list, the system
    prompt): the units of one call share a tier, role, message index and id, appended as they come.
    What needs a look inside each block (its kind, its markers) is left to :meth:`finish`, one pass
    over every unit, which costs less than a Python statement or call per block here.
    """

    def __init__(self) -> None:
        self.raws: list[JSON] = []
        self.tiers: list[Tier] = []
        self.roles: list[str] = []
        self.message_indexes: list[int | None] = []
        self.block_indexes: list[int | None] = []
        self.message_ids: list[str | None] = []
        self.placed: list[tuple[int, int, str]] = []
        """(first position, count, kind) of each call whose place names its units' kind."""
        # Set by finish().
        self.kinds: list[str] = []
        self.marked: list[int] = []
        """Positions of the units that carry a ``cache_control`` marker."""
        self.nested: list[int] = []
        """Positions of the tool results whose parts carry a marker."""
        self.finished = -1
        """How many units :meth:`finish` looked at; -1 until it runs and after a rewind."""

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
        size = len(blocks)
        if kind is not None and size:
            self.placed.append((len(self.raws), size, kind))
        self.raws += blocks
        self.tiers += [tier] * size
        self.roles += [role] * size
        self.message_indexes += [message_index] * size
        self.message_ids += [message_id] * size
        self.block_indexes += range(first_block, first_block + size)

    def position(self) -> int:
        """How many units there are so far, for :meth:`rewind`."""
        return len(self.raws)

    def rewind(self, position: int) -> None:
        """Forget every unit added since ``position``."""
        for units in (
            self.raws,
            self.tiers,
            self.roles,
            self.message_indexes,
            self.message_ids,
            self.block_indexes,
        ):
            del units[position:]
        self.placed = [call for call in self.placed if call[0] < position]
        self.finished = -1

    def finish(self) -> None:
        """Name every unit's kind and find the markers, once every unit is in.

        Does nothing when no unit came since it last ran: units only grow between rewinds, so an
        unchanged count means unchanged units, and a rewind marks the lists stale.
        """
        raws = self.raws
        if self.finished == len(raws):
            return
        self.finished = len(raws)
        # One pass names every unit from its block and notes its markers: a second pass over the same
        # blocks cost more than the work in it, and so did a call of _kind() or _marked() per block,
        # so the common unit, a block object, has both spelled inline. The few calls whose place
        # names their units (tools, system, tool calls) overwrite their kinds after.
        named: list[str] = []
        marked: list[int] = []
        name, mark, aliases = named.append, marked.append, _KIND_ALIASES
        for position, raw in enumerate(raws):
            if type(raw) is dict:
                kind = raw.get("type")
                name(aliases.get(kind, kind) if type(kind) is str else _kind(raw))
                if _CACHE_CONTROL in raw or _BREAKPOINT in raw:
                    mark(position)
            else:
                name(_kind(raw))
        for first, size, given in self.placed:
            named[first : first + size] = [given] * size
        self.kinds = named
        self.marked = marked
        self.nested = [p for p in _positions(named, "tool_result") if _has_nested_control(raws[p])]

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
        """Tier, role and message-start bytes, one per unit each.

        The role and the start of a new message are part of what the model sees, so they join the
        chain even though the block hash (content address) leaves them out. A unit starts a new
        message when its message index differs from the unit's before it (the first unit compares
        with -1): the later blocks of one call share its index.
        """
        indexes = self.message_indexes
        return (
            bytes(map(_TIER_TAG.__getitem__, self.tiers)),
            bytes(map(_ROLE_TAG.get, self.roles, repeat(_UNKNOWN_ROLE))),
            bytes(map(_BOUNDARY.__getitem__, map(ne, indexes, [-1, *indexes]))),
        )


def _control(raw: JSON) -> JSON:
    assert isinstance(raw, dict)
    return raw["cache_control"] if "cache_control" in raw else raw["prompt_cache_breakpoint"]


_CACHE_CONTROL, _BREAKPOINT = sorted(MARKER_KEYS)
"""The keys of :data:`MARKER_KEYS` one by one: two ``in`` tests cost less than half of
``frozenset.isdisjoint``, which walks the unit's keys, over thousands of units. A third key fails this
unpacking at import, so the tests below cannot silently miss it."""


def _marked(raw: JSON) -> bool:
    return type(raw) is dict and (_CACHE_CONTROL in raw or _BREAKPOINT in raw)


def _has_nested_control(block: JSON) -> bool:
    if not isinstance(block, dict):
        return False
    content = block.get("content")
    # The content first: most tool results hold a string, and then nothing else needs a look.
    if not isinstance(content, list) or _marked(block):
        return False  # a marked unit is stripped whole
    return any(_marked(p) for p in content)


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


NON_KEYING_PARAMS = ("prompt_cache_retention", "prompt_cache_options")
"""Cache settings kept with a request but not part of its cache key: how long an entry lives and
whether OpenAI adds its implicit breakpoint (developers.openai.com/api/docs/guides/prompt-caching,
checked 2026-12-03). The predictor reads them; the prefix hashes leave them out."""


def cache_params(provider: str, api: str, body: Mapping[str, JSON]) -> dict[str, JSON]:
    """The request parameters that key the provider's cache besides the prompt itself (DESIGN §7),
    and the cache settings of :data:`NON_KEYING_PARAMS`, kept so the predictor can apply them."""
    keys = (
        "tool_choice",
        "thinking",
        "effort",
        "reasoning",
        "reasoning_effort",
        "prompt_cache_key",
        "speed",
        *NON_KEYING_PARAMS,
    )
    params: dict[str, JSON] = {key: body[key] for key in keys if body.get(key) is not None}
    output_config = body.get("output_config")
    if isinstance(output_config, dict):
        if output_config.get("effort") is not None:
            params["effort"] = output_config["effort"]
        if output_config.get("format") is not None:
            params["output_format"] = output_config["format"]
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
    if "document" in kinds and _citations_enabled(units.raws, kinds):
        params["citations"] = True
    header_params, tier_params = scoped_params(provider, _keying(params, model))
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


def images_present(raws: Sequence[JSON], kinds: Sequence[str]) -> bool:
    """Whether the request carries an image, at the top level of a message or inside a tool result.

    "Images present" keys the messages cache (prompt-caching guide, "What invalidates the cache",
    checked 2026-12-03: "Adding/removing images anywhere in the prompt"), and a tool result may hold
    image blocks in its ``content`` (tool-use docs, "tool_result ... content ... image blocks"):
    Claude Code returns screenshots that way.
    """
    if "image" in kinds:
        return True
    for position in _positions(kinds, "tool_result"):
        raw = raws[position]
        if isinstance(raw, dict):
            content = raw.get("content")
            if isinstance(content, list) and any(_kind(part) == "image" for part in content):
                return True
    return False


def _positions(kinds: Sequence[str], kind: str) -> list[int]:
    """The positions of the units of ``kind``, found by C-level iterators: one Python step per unit
    costs more than the work done on the few units of a kind."""
    return list(compress(count(), map(eq, kinds, repeat(kind))))


def _citations_enabled(raws: list[JSON], kinds: list[str]) -> bool:
    return any(
        kind == "document"
        and isinstance(raw, dict)
        and isinstance(raw.get("citations"), dict)
        and bool(raw["citations"].get("enabled"))
        for raw, kind in zip(raws, kinds, strict=True)
    )


def _keying(params: Mapping[str, JSON], model: str) -> dict[str, JSON]:
    """The parameters that key the cache: the settings of :data:`NON_KEYING_PARAMS` left out, and an
    effort equal to the model's default dropped. The guide (checked 2026-12-03): "Setting effort
    explicitly to the model's default is equivalent to omitting it and does not invalidate"; the
    default is ``high``, ``medium`` on Claude Opus 5.5 (effort docs)."""
    keyed = {key: value for key, value in params.items() if key not in NON_KEYING_PARAMS}
    default = _default_effort(model)
    if default is not None and keyed.get("effort") == default:
        del keyed["effort"]
    return keyed


def _default_effort(model: str) -> str | None:
    name = model.lower()
    if "claude" not in name:
        return None
    return "medium" if "opus-5-5" in name else "high"


ANTHROPIC_TIER_PARAMS: Mapping[str, Tier] = {
    # Anthropic's prompt-caching guide, "What invalidates the cache" (read 2026-12-02,
    # https://platform.claude.com/docs/en/build-with-claude/prompt-caching): toggling web search or
    # citations invalidates the system and messages caches; changing tool_choice, images present or
    # the thinking parameters invalidates the messages cache only. Tools survive all of them.
    # Checked again 2026-12-03: fast mode's speed "invalidates system and message caches", and
    # output_config.format "will invalidate any prompt cache for that conversation thread", so it
    # keys the whole prompt (it is left out here and joins the header).
    "web_search": "system",
    "citations": "system",
    "speed": "system",
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
        if index < last_turn and isinstance(content, list) and any(_kind(b) == "thinking" for b in content):
            assert isinstance(message, dict)
            message = {**message, "content": [b for b in content if _kind(b) != "thinking"]}
        kept.append(message)
    return kept


def _opens_turn(message: JSON) -> bool:
    """A user message with something besides tool results: the start of a new assistant turn."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return True
    return any(_kind(block) != "tool_result" for block in content)


def _render_messages(units: _Units, messages: JSON, *, leading_system: bool) -> None:
    if not isinstance(messages, list):
        raise RenderError("request body: field 'messages' is missing or not a list")
    _add_messages(units, messages, leading_system=leading_system)


def _add_messages(units: _Units, messages: list[JSON], *, leading_system: bool) -> None:
    """Append every unit of a message list (Anthropic Messages or OpenAI Chat).

    This loop runs once a message, thousands of times a request: the common message, a list of one
    block, is appended here directly, as :meth:`_Units.add` would append it, and the id test of
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
