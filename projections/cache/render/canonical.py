"""Canonical bytes of request units, their block hashes and the prefix-hash chain (DESIGN §6.1).

A unit's canonical bytes are its stable JSON: keys sorted, no whitespace, raw UTF-8, without the
``cache_control`` marker (it is not part of the provider's cache key). orjson writes them; a value
orjson refuses (an integer beyond 64 bits, a lone surrogate) falls back to the standard library's
encoder with the same layout, lone surrogates written as ``\\uXXXX`` escapes, so every JSON body
renders and equal content always gives equal bytes.

The units of a request are serialized as one JSON array in a single call; :func:`hash_units` then
walks it once for each unit's code points, block hash and chain link. The array is not kept: a
unit's bytes are serialized again on the rare occasions they are needed (:func:`canonical_bytes`),
so a session's renderings hold no copy of their prompts. The walk runs in C (see
:mod:`projections.cache.render.accel`) when the extension was built, and as :func:`python_hash_units`
otherwise: both give identical results, which the tests check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from hashlib import blake2b

import orjson

from projections.cache.render import accel
from projections.normalized import JSON

DIGEST_SIZE = 16
"""Bytes of every BLAKE2b digest: 128 bits is ample for content addressing inside one store."""

HashedUnits = tuple[list[int], list[str], list[str]]
"""For each unit: its code points, its block hash and its prefix hash (hex)."""
Framing = tuple[bytes, bytes, bytes]
"""One byte per unit each: its tier, its role, and whether it starts a new message."""
Mixes = list[tuple[int, bytes]]
"""(position, run of 16-byte digests) that join the chain before that unit, positions ascending."""

_SORTED = orjson.OPT_SORT_KEYS
_FALLBACK_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_bytes(raw: JSON) -> bytes:
    """Stable JSON of one unit as given (strip ``cache_control`` first: see :func:`without_control`)."""
    try:
        return orjson.dumps(raw, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _FALLBACK_ENCODER.encode(raw).encode("utf-8", "backslashreplace")


def canonical_array(raws: Sequence[JSON]) -> bytes:
    """The canonical bytes of every unit as one compact JSON array, in one call where it can be."""
    try:
        return orjson.dumps(raws, option=_SORTED)
    except TypeError:
        return b"[" + b",".join(map(canonical_bytes, raws)) + b"]"


MARKER_KEYS = frozenset({"cache_control", "prompt_cache_breakpoint"})
"""Fields that mark a cache breakpoint (Anthropic's, OpenAI's GPT-5.6 one) rather than content."""


def without_control(raw: JSON) -> JSON:
    """The unit as the cache keys it: breakpoint markers removed, also from a tool result's parts."""
    if not isinstance(raw, dict):
        return raw
    stripped = {k: v for k, v in raw.items() if k not in MARKER_KEYS}
    content = stripped.get("content")
    if stripped.get("type") == "tool_result" and isinstance(content, list):
        stripped["content"] = [without_control(part) if isinstance(part, dict) else part for part in content]
    return stripped


def unit_bytes(raw: JSON) -> bytes:
    """A unit's canonical bytes: ``cache_control`` removed, then serialized."""
    return canonical_bytes(without_control(raw))


def canonical_text(raw: JSON) -> str:
    """A unit's canonical bytes as text."""
    return unit_bytes(raw).decode("utf-8")


def block_hash(raw: JSON) -> str:
    """BLAKE2b-128 (hex) of a unit's canonical bytes."""
    return digest(unit_bytes(raw)).hex()


def digest(data: bytes) -> bytes:
    """BLAKE2b-128 of ``data``."""
    return blake2b(data, digest_size=DIGEST_SIZE).digest()


def python_hash_units(parts: Sequence[bytes], framing: Framing, chain: bytes, mixes: Mixes) -> HashedUnits:
    """The walk of :func:`hash_units` in plain Python, over the units' bytes already split.

    Prefix hash ``i`` is ``blake2b(chain + block digest + tier[i] + role[i] + start[i])`` over the
    previous link; before unit ``p`` each 16-byte digest of ``mixes[p]`` joins the chain as
    ``blake2b(chain + digest)``.
    """
    chars = [len(part.decode("utf-8")) for part in parts]
    digests = [digest(part) for part in parts]
    return chars, [d.hex() for d in digests], python_chain_units(b"".join(digests), framing, chain, mixes)


def python_chain_units(digests: bytes, framing: Framing, chain: bytes, mixes: Mixes) -> list[str]:
    """The chain of :func:`python_hash_units` over block digests already known, 16 bytes a unit."""
    tiers, roles, starts = framing
    joins = dict(mixes)
    prefixes: list[str] = []
    for i in range(len(tiers)):
        run = joins.get(i, b"")
        for k in range(0, len(run), DIGEST_SIZE):
            chain = digest(chain + run[k : k + DIGEST_SIZE])
        block = digests[i * DIGEST_SIZE : (i + 1) * DIGEST_SIZE]
        chain = digest(chain + block + bytes((tiers[i], roles[i], starts[i])))
        prefixes.append(chain.hex())
    return prefixes


def hash_units(raws: Sequence[JSON], framing: Framing, chain: bytes, mixes: Mixes) -> HashedUnits:
    """Serialize ``raws`` (already stripped of markers) and hash every unit.

    ``framing`` holds one byte per unit each for its tier, its role and whether it starts a new
    message; they join each link of the chain. ``chain`` is the 16-byte header the chain starts
    from; ``mixes`` lists (position, digests) that join it before a unit. Returns, per unit, its code
    points, its block hash and its prefix hash.
    """
    if accel.native is not None:
        return accel.native.hash_units(canonical_array(raws), *framing, chain, mixes)
    return python_hash_units([canonical_bytes(raw) for raw in raws], framing, chain, mixes)


def chain_units(block_hashes: Sequence[str], framing: Framing, chain: bytes, mixes: Mixes) -> list[str]:
    """The prefix hashes of units whose block hashes (hex) are known already, chained from ``chain``
    as :func:`hash_units` chains them: a later request re-links the units it shares with an earlier
    one when something before them changed, without serializing them again."""
    digests = bytes.fromhex("".join(block_hashes))
    if accel.native is not None:
        return accel.native.chain_units(digests, *framing, chain, mixes)
    return python_chain_units(digests, framing, chain, mixes)
