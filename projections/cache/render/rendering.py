"""Canonical rendering of a provider request into content-addressed units (DESIGN §6.1).

A request is flattened in the provider's prefix order — tools, system blocks, message content
blocks — and each unit gets canonical bytes (sorted-key compact JSON without ``cache_control``), a
BLAKE2b block hash, and a prefix hash chained over every earlier unit with the model and the
cache-keying parameters as a header. Two requests share a cached prefix exactly as far as their
prefix-hash lists agree, so a diff never has to look at content that did not change.

The render keeps parallel lists rather than one object per unit, and serializes and hashes all
units in one pass (``canonical.hash_units``): a 6,000-message request has thousands of units, and
per-unit interpreter work would otherwise dominate the cost of hashing their bytes. A session's
requests rendered in order through a :class:`Renderer` take the units of the messages they share
with an earlier request from its rendering (:mod:`projections.cache.render.reuse`), which halves
the cost of a long session and changes no rendering. Every rule of what a unit is lives in Python
only, here and in :mod:`projections.cache.render.units` (the lists, kinds and markers); the C
extension (:mod:`projections.cache.render.accel`) hashes the bytes it is handed and compares
messages, nothing more. The parameters that key the cache besides the prompt are
:mod:`projections.cache.render.cache_keys`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, islice, repeat
from operator import add, ne, not_, or_

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
from projections.cache.render.reuse import Reusable, Splice, hash_spliced, spliced_framing, take, take_head
from projections.cache.render.units import Units, block_kind
from projections.normalized import JSON, Usage
from projections.providers.rules import keeps_only_last_turn_thinking

_RUN_KINDS = frozenset({"tool_use", "tool_result"})


class RenderError(ValueError):
    """A request body that cannot be rendered, naming the field that is wrong."""


def _lookback_groups(kinds: list[str], splices: Sequence[Splice] = ()) -> list[int]:
    """Each unit's lookback position: a run of adjacent tool_use (or tool_result) units shares one.

    Anthropic's prompt-caching guide (platform.claude.com/docs/en/build-with-claude/prompt-caching,
    checked 2026-12-03, as quoted by two independent 2026 readings of it): "The lookback window is
    20 blocks … a run of consecutive tool_use blocks counts as one position, and so does a run of
    consecutive tool_result blocks", the breakpoint itself being the first of the 20. So N parallel
    tool calls and their N results take two positions, not 2N. A unit opens a position when its
    kind differs from the previous unit's or is not a run kind; the position is the count of
    openings so far, minus one.

    The units of a splice open positions as they did in their source but the first, whose
    predecessor is another: their positions are the source's, moved by one figure.
    """
    groups: list[int] = []
    at = 0
    for splice in (*splices, None):
        end = splice.at if splice is not None else len(kinds)
        if end > at:
            groups += _groups(kinds, at, end, groups[-1] if groups else -1)
        if splice is None:
            break
        source = splice.source.rendered.lookback_groups[splice.start : splice.start + splice.length]
        first = _groups(kinds, splice.at, splice.at + 1, groups[-1] if groups else -1)[0]
        groups += map(add, source, repeat(first - source[0]))
        at = splice.at + splice.length
    return groups


def _groups(kinds: list[str], start: int, end: int, last: int) -> list[int]:
    """The lookback positions of units ``start:end``, the unit before them at position ``last``."""
    # C-level iterators, as a Python step per unit cost a tenth of a render: each unit adds 1 when it
    # opens a position (kind differs from the one before, or is not a run kind).
    mine = kinds[start:end]
    before = kinds[start - 1] if start else ""
    opens = map(or_, map(ne, mine, chain((before,), mine)), map(not_, map(_RUN_KINDS.__contains__, mine)))
    return list(islice(accumulate(opens, initial=last), 1, None))


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
    so the units sum to the reported prompt total. A session's requests rendered in order cost less
    through a :class:`Renderer`, which gives the same renderings.
    """
    return _render(provider, api, body, usage, ())[0]


RECENT = 4
"""Renderings a :class:`Renderer` keeps to take shared messages from: the request before, and the
few before it that another lineage's requests (a subagent, a side question) came between."""


class Renderer:
    """Renders the requests of one session in order, each taking the units of the messages it shares
    with one of the last few (:mod:`projections.cache.render.reuse`) rather than rendering them again.

    Every rendering equals :func:`render_request`'s of the same body; only the cost differs. It
    holds :data:`RECENT` renderings and their bodies' messages, whatever the session's length.
    """

    def __init__(self) -> None:
        self._recent: deque[Reusable] = deque(maxlen=RECENT)

    def render(
        self, provider: str, api: str, body: Mapping[str, JSON], *, usage: Usage | None = None
    ) -> RenderedRequest:
        """As :func:`render_request`."""
        rendered, reusable = _render(provider, api, body, usage, self._recent)
        if reusable is not None:
            self._recent.appendleft(reusable)
        return rendered


def _render(
    provider: str,
    api: str,
    body: Mapping[str, JSON],
    usage: Usage | None,
    recent: Sequence[Reusable],
) -> tuple[RenderedRequest, Reusable | None]:
    if not isinstance(body, Mapping):
        raise RenderError(f"request body: expected an object, got {type(body).__name__}")
    model = body.get("model")
    if not isinstance(model, str):
        raise RenderError("request body: field 'model' is missing or not a string")
    params = cache_params(provider, api, body)
    units = Units()
    sent: Sent | None = None
    if api == "messages":
        sent = _render_anthropic(units, body, recent)
    elif api == "chat":
        sent = _render_chat(units, body, recent)
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
    if images_present(units):
        params["images"] = True
    if "document" in kinds and citations_enabled(units.raws, kinds):
        params["citations"] = True
    header_params, tier_params = scoped_params(provider, keying_params(params, model))
    header = digest(canonical_bytes({"model": model, "params": header_params}))
    splices = sent.splices if sent is not None else ()
    framing = spliced_framing(units, splices) if splices else units.framing()
    mixes = tier_mixes(units.tiers, tier_params)
    if splices:
        chars, block_hashes, prefix_hashes = hash_spliced(units, framing, header, mixes, splices)
    else:
        chars, block_hashes, prefix_hashes = hash_units(units.stripped(), framing, header, mixes)
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
        lookback_groups=_lookback_groups(kinds, splices),
        markers=tuple(markers),
        warnings=tuple(warnings),
    )
    calibrate(rendered, usage)
    if sent is None:
        return rendered, None
    reusable = Reusable(
        api=api,
        head=sent.head,
        messages=sent.messages,
        dropped_thinking=sent.dropped_thinking,
        start=sent.start,
        units=units,
        rendered=rendered,
        framing=framing,
        mixes=mixes,
    )
    return rendered, reusable


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


@dataclass(frozen=True, slots=True)
class Sent:
    """The message list a request was rendered from, as a later request compares with it."""

    head: list[JSON]
    """What the units before the messages were rendered from (see :class:`Reusable`)."""
    messages: list[JSON]
    start: int
    """Position of its first unit."""
    dropped_thinking: bool
    splices: tuple[Splice, ...]
    """The units taken from earlier requests, in position order: the tools and system prompt, the
    leading messages, either or both."""


def _render_anthropic(units: Units, body: Mapping[str, JSON], recent: Sequence[Reusable]) -> Sent:
    system = body.get("system")
    head = [body.get("tools"), system]
    taken = take_head(units, recent, "messages", head) if recent else None
    if taken is None:
        _render_tools(units, body)
        if isinstance(system, str):
            units.add("system", "system", None, None, [system], kind="system")
        elif isinstance(system, list):
            units.add("system", "system", None, None, system, kind="system")
        elif system is not None:
            raise RenderError("request body: field 'system' is neither a string nor a list")
    spliced = (taken,) if taken is not None else ()
    messages = body.get("messages")
    model = body.get("model")
    start = units.position()
    drops = isinstance(model, str) and keeps_only_last_turn_thinking(model)
    if drops and isinstance(messages, list) and any(r.dropped_thinking for r in recent):
        # The session's earlier requests had thinking to drop, so this one is rendered that way at
        # once: the messages it shares with them are the stripped ones.
        kept = without_earlier_thinking(messages)
        splice = _render_messages(units, kept, recent, leading_system=False)
        return Sent(head, kept, start, True, _spliced(spliced, splice))
    # Render the messages as sent, and render them again without the earlier turns' thinking only
    # when the model drops it and a message can hold some: a thinking unit, or the blocks a tool
    # message wraps into one unit. Looking through every block of every message first cost more
    # than rendering them, and most requests have no thinking to drop.
    splice = _render_messages(units, messages, recent, leading_system=False)
    assert isinstance(messages, list)  # _render_messages refuses anything else
    if drops:
        units.finish()
        if "thinking" in units.kinds[start:] or "tool" in units.roles[start:]:
            units.rewind(start)
            kept = without_earlier_thinking(messages)
            splice = _render_messages(units, kept, recent, leading_system=False)
            return Sent(head, kept, start, True, _spliced(spliced, splice))
    return Sent(head, messages, start, False, _spliced(spliced, splice))


def _spliced(head: tuple[Splice, ...], messages: Splice | None) -> tuple[Splice, ...]:
    return (*head, messages) if messages is not None else head


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


def _render_messages(
    units: Units, messages: JSON, recent: Sequence[Reusable], *, leading_system: bool
) -> Splice | None:
    """Append the units of a message list: those of the leading messages an earlier request shared
    taken from it, the rest rendered. Returns where the taken units came from."""
    if not isinstance(messages, list):
        raise RenderError("request body: field 'messages' is missing or not a list")
    api = "chat" if leading_system else "messages"
    taken, splice = take(units, recent, api, messages) if recent else (0, None)
    # A leading run of system (or developer) messages is the system tier: still running only if
    # every message taken was one.
    head = leading_system and all(_role(m) in _HEAD_ROLES for m in islice(messages, taken))
    _add_messages(units, messages, leading_system=head, first=taken)
    return splice


_HEAD_ROLES = ("system", "developer")


def _role(message: JSON) -> str:
    return str(message.get("role", "?")) if isinstance(message, dict) else "?"


def _add_messages(units: Units, messages: list[JSON], *, leading_system: bool, first: int = 0) -> None:
    """Append every unit of a message list (Anthropic Messages or OpenAI Chat), from message ``first``.

    This loop runs once a message, thousands of times a request: the common message, a list of one
    block, is appended here directly, as :meth:`Units.add` would append it, and the id test of
    :func:`_message_id` is spelled inline, since a Python call per message cost a fifth of the loop.
    """
    head = leading_system
    add = units.add
    append_raw, append_tier, append_role = units.raws.append, units.tiers.append, units.roles.append
    append_index, append_id = units.message_indexes.append, units.message_ids.append
    append_block = units.block_indexes.append
    for mi, message in enumerate(islice(messages, first, None), first):
        if not isinstance(message, dict):
            raise RenderError(f"request body: messages[{mi}] is not an object")
        role = str(message.get("role", "?"))
        head = head and role in _HEAD_ROLES
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


def _render_chat(units: Units, body: Mapping[str, JSON], recent: Sequence[Reusable]) -> Sent:
    head = [body.get("tools")]
    taken = take_head(units, recent, "chat", head) if recent else None
    if taken is None:
        _render_tools(units, body)
    start = units.position()
    messages = body.get("messages")
    splice = _render_messages(units, messages, recent, leading_system=True)
    assert isinstance(messages, list)  # _render_messages refuses anything else
    return Sent(head, messages, start, False, _spliced((taken,) if taken is not None else (), splice))


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
