"""Claude Code's attribution block, recognised in a rendered request (the sources and what the
block does to reads: :mod:`projections.cache.attribution`).

The block is a system text block ``x-anthropic-billing-header: cc_version=…; cc_entrypoint=…;
cch=…;`` (later ``cc_prev_req=…`` too), its own unit as Claude Code sends it (``system[0]``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import JSON

PREFIX = "x-anthropic-billing-header:"
"""How the block's text starts."""

REMEDY = (
    "Claude Code's attribution block changes per session and per request: set "
    "CLAUDE_CODE_ATTRIBUTION_HEADER=0 in Claude Code's environment (or settings.json env), or send "
    "the traffic through a gateway that strips the block, so the prompt after it stays byte-stable."
)


@dataclass(frozen=True, slots=True)
class AttributionBlock:
    """The attribution block of one request: its unit and what it says."""

    position: int
    text: str
    fields: Mapping[str, str]


def attribution_text(raw: JSON) -> str | None:
    """The header line a system unit carries, when the unit is one (a text block or a string)."""
    text = raw.get("text") if isinstance(raw, dict) else raw
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    return stripped if stripped.startswith(PREFIX) else None


def parse_fields(text: str) -> dict[str, str]:
    """``{"cc_version": "2.1.88.a3f", "cc_entrypoint": "cli", "cch": "36ee5"}`` from the header line
    (only its first line: a proxy may have merged the rest of the system prompt after it)."""
    line = text.removeprefix(PREFIX).split("\n", 1)[0]
    out: dict[str, str] = {}
    for part in line.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name:
            out[name.strip()] = value.strip()
    return out


def attribution_block(rendered: RenderedRequest) -> AttributionBlock | None:
    """The request's attribution block: the first system unit that is one (``None`` without)."""
    for position in range(rendered.tier_start("system"), rendered.tier_start("messages")):
        text = attribution_text(rendered.raws[position])
        if text is not None:
            return AttributionBlock(position, text, parse_fields(text))
    return None


def fields_changed(old: str, new: str) -> str:
    """What differs between two header lines, field by field: ``cch 36ee5 → 0aaa9``."""
    before, after = parse_fields(old), parse_fields(new)
    names = [*before, *(name for name in after if name not in before)]
    changed = [
        f"{name} {before.get(name, '(none)')} → {after.get(name, '(none)')}"
        for name in names
        if before.get(name) != after.get(name)
    ]
    return "; ".join(changed) or "the same fields, written differently"


def blind_hashes(
    rendered: RenderedRequest, block: AttributionBlock, positions: Iterable[int]
) -> dict[int, str]:
    """The hash of the prefix through each of ``positions`` with the attribution block left out,
    for those past the block (before it the prefix hash says the same). One pass over the units,
    digesting only at the positions asked for: a long conversation has thousands of units and a
    request needs a few dozen (its markers and their lookback)."""
    wanted = sorted({p for p in positions if block.position < p < len(rendered)})
    out: dict[int, str] = {}
    if not wanted:
        return out
    running = hashlib.blake2b(rendered.header_hash.encode(), digest_size=16)
    hashes = rendered.block_hashes
    next_index = 0
    for position in range(wanted[-1] + 1):
        if position != block.position:
            running.update(hashes[position].encode())
        if position == wanted[next_index]:
            out[position] = running.copy().hexdigest()
            next_index += 1
    return out


def block_change(prev: RenderedRequest, cur: RenderedRequest, position: int) -> str | None:
    """What became of the attribution block at ``position``, where either request has one there:
    its fields changed, it is new, or it is gone; ``None`` when neither has one."""
    old = _system_block(prev, position)
    new = _system_block(cur, position)
    if old is None and new is None:
        return None
    if old is not None and new is not None:
        return fields_changed(old, new)
    return f"the block {new!r} is new" if new is not None else f"the block {old!r} is gone"


def _system_block(rendered: RenderedRequest, position: int) -> str | None:
    if position >= len(rendered) or rendered.tiers[position] != "system":
        return None
    return attribution_text(rendered.raws[position])
