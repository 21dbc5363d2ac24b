"""The units of one request as parallel per-unit lists, each unit's kind and its cache markers.

A rendering (:mod:`projections.cache.render.rendering`) appends each call's blocks here in prefix order;
:meth:`Units.finish` then names every unit's kind and finds the units that carry a marker in one
pass, and :meth:`Units.stripped` and :meth:`Units.framing` hand the hashing what the cache keys: the
blocks without their markers, and the tier, role and message start of each unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, islice, repeat
from operator import eq, ne

from projections.cache.render.canonical import MARKER_KEYS, without_control
from projections.cache.render.rendered_request import Tier
from projections.normalized import JSON

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


def block_kind(block: JSON, given: str | None = None) -> str:
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


class Units:
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
        # Extended by finish() and splice(): they cover the first len(kinds) units.
        self.kinds: list[str] = []
        self.marked: list[int] = []
        """Positions of the units that carry a ``cache_control`` marker."""
        self.nested: list[int] = []
        """Positions of the tool results whose parts carry a marker."""
        self.pictured: list[int] = []
        """Positions of the tool results with an image among their parts."""

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
        del self.kinds[position:]
        self.placed = [call for call in self.placed if call[0] < position]
        self.marked = [p for p in self.marked if p < position]
        self.nested = [p for p in self.nested if p < position]
        self.pictured = [p for p in self.pictured if p < position]

    def finish(self) -> None:
        """Name the kind of every unit added since it last ran, and find their markers.

        Units only grow between rewinds, and a rewind cuts the kinds with the units, so the units
        past ``len(self.kinds)`` are exactly the ones not looked at yet.
        """
        raws = self.raws
        done = len(self.kinds)
        if done == len(raws):
            return
        # One pass names every unit from its block and notes its markers: a second pass over the same
        # blocks cost more than the work in it, and so did a call of block_kind() or _marked() per block,
        # so the common unit, a block object, has both spelled inline. The few calls whose place
        # names their units (tools, system, tool calls) overwrite their kinds after.
        named = self.kinds
        name, mark, aliases = named.append, self.marked.append, _KIND_ALIASES
        for position, raw in enumerate(islice(raws, done, None), done):
            if type(raw) is dict:
                kind = raw.get("type")
                name(aliases.get(kind, kind) if type(kind) is str else block_kind(raw))
                if _CACHE_CONTROL in raw or _BREAKPOINT in raw:
                    mark(position)
            else:
                name(block_kind(raw))
        for first, size, given in self.placed:
            if first >= done:
                named[first : first + size] = [given] * size
        for p in positions_of(named[done:], "tool_result", done):
            raw = raws[p]
            parts = raw.get("content") if isinstance(raw, dict) else None
            # Most tool results hold a string, and then nothing else needs a look.
            if type(parts) is list:
                if not _marked(raw) and any(_marked(part) for part in parts):
                    self.nested.append(p)  # a marked unit is stripped whole
                if any(block_kind(part) == "image" for part in parts):
                    self.pictured.append(p)

    def splice(self, source: Units, start: int, end: int) -> None:
        """Append units ``start:end`` of ``source``, kinds and markers included: an earlier request's
        units for the messages this one shares with it. Every unit so far must be finished."""
        assert len(self.kinds) == len(self.raws)
        assert len(source.kinds) >= end
        shift = len(self.raws) - start
        self.raws += source.raws[start:end]
        self.tiers += source.tiers[start:end]
        self.roles += source.roles[start:end]
        self.message_indexes += source.message_indexes[start:end]
        self.message_ids += source.message_ids[start:end]
        self.block_indexes += source.block_indexes[start:end]
        self.kinds += source.kinds[start:end]
        self.marked += [p + shift for p in source.marked if start <= p < end]
        self.nested += [p + shift for p in source.nested if start <= p < end]
        self.pictured += [p + shift for p in source.pictured if start <= p < end]

    def controls(self) -> list[tuple[int, JSON]]:
        """(position, ``cache_control``) of each unit that carries a marker, in order."""
        return [(p, _control(self.raws[p])) for p in self.marked]

    def stripped(self, start: int = 0, end: int | None = None) -> list[JSON]:
        """Units ``start:end`` as the cache keys them: markers removed, also from a tool result's parts."""
        end = len(self.raws) if end is None else end
        inside = [p for p in (*self.marked, *self.nested) if start <= p < end]
        if not inside and start == 0 and end == len(self.raws):
            return self.raws
        raws = self.raws[start:end]
        for p in inside:
            raws[p - start] = without_control(raws[p - start])
        return raws

    def framing(self, start: int = 0, end: int | None = None) -> tuple[bytes, bytes, bytes]:
        """Tier, role and message-start bytes, one per unit each (of units ``start:end``).

        The role and the start of a new message are part of what the model sees, so they join the
        chain even though the block hash (content address) leaves them out. A unit starts a new
        message when its message index differs from the unit's before it (the first unit compares
        with -1): the later blocks of one call share its index.
        """
        end = len(self.raws) if end is None else end
        indexes = self.message_indexes[start:end]
        before = self.message_indexes[start - 1] if start else -1
        return (
            bytes(map(_TIER_TAG.__getitem__, self.tiers[start:end])),
            bytes(map(_ROLE_TAG.get, self.roles[start:end], repeat(_UNKNOWN_ROLE))),
            bytes(map(_BOUNDARY.__getitem__, map(ne, indexes, [before, *indexes]))),
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


def positions_of(kinds: Sequence[str], kind: str, first: int = 0) -> list[int]:
    """The positions of the units of ``kind`` (``kinds[0]`` at position ``first``), found by C-level
    iterators: one Python step per unit costs more than the work done on the few units of a kind."""
    return list(compress(count(first), map(eq, kinds, repeat(kind))))
