"""A request rendered into content-addressed units (DESIGN §6.1), as the rest of the engine reads it.

A rendering holds parallel lists indexed by unit position rather than one object per unit: a
6,000-message request has thousands of units, and most callers need only a list or two.
:class:`Unit` and :class:`Block` are built on demand for the few that want one unit whole.
:mod:`projections.cache.render.rendering` builds a rendering;
:mod:`projections.cache.render.calibration` sets its token counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from projections.cache.render.canonical import canonical_array, unit_bytes, without_control
from projections.normalized import JSON

Tier = Literal["tools", "system", "messages"]

TIERS: tuple[Tier, ...] = ("tools", "system", "messages")


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
            canonical=self.canonical(i),
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

    def canonical(self, i: int) -> bytes:
        """The canonical bytes of unit ``i``, serialized again: a rendering keeps no copy of the prompt."""
        return unit_bytes(self.raws[i])

    @property
    def canonicals(self) -> list[bytes]:
        """Every unit's canonical bytes, in order."""
        return [self.canonical(i) for i in range(len(self.raws))]

    def canonical_list(self, through: int) -> bytes:
        """The JSON array of the canonical bytes of units ``0..through`` (``[]`` below 0)."""
        return canonical_array([without_control(raw) for raw in self.raws[: through + 1]])

    def block(self, i: int) -> Block:
        """The content-addressed :class:`Block` of unit ``i``."""
        return Block(self.block_hashes[i], self.kinds[i], self.canonical(i), self.chars[i], self.tokens[i])

    def blocks(self) -> list[Block]:
        """One :class:`Block` per unit, in order (duplicates included; the store dedupes by hash)."""
        return [self.block(i) for i in range(len(self.block_hashes))]

    def prefix_tokens(self, position: int) -> int:
        """Tokens of the prefix through unit ``position`` inclusive."""
        return self.cum_tokens[position + 1]

    def tier_start(self, tier: Tier) -> int:
        """Position of the first unit of ``tier`` or later; the unit count if there is none."""
        return tier_start(self.tiers, tier)

    @property
    def total_tokens(self) -> int:
        """Every prompt token of the request: the units plus what no unit accounts for."""
        return self.cum_tokens[-1] + self.unattributed_tokens


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


def tier_start(tiers: Sequence[Tier], tier: Tier) -> int:
    """Position of the first unit of ``tier`` or a later tier; the unit count if there is none."""
    for candidate in TIERS[TIERS.index(tier) :]:
        try:
            return tiers.index(candidate)
        except ValueError:
            continue
    return len(tiers)
