"""What a request's rendering takes from an earlier one's: the units of the messages they share.

An agent re-sends its whole history on every call, so most of request N's messages are request
N-1's, and rendering them again (naming each unit, serializing and hashing it) was most of the cost
of rendering a long session. :class:`~projections.cache.render.rendering.Renderer` keeps the last
few renderings as :class:`Reusable`; the next request takes the units of its leading messages from
the one it shares most with (:func:`take`) and renders only the rest. Its prefix hashes are copied
too when everything before those messages hashed alike, and re-linked from their block hashes
otherwise (:func:`hash_spliced`), so a clock line in the system prompt costs a chain, not a render.

Nothing here decides what a unit is: a shared message's units are exactly what rendering it again
would give, because two messages are taken as shared only when they serialize to the same canonical
bytes (:func:`shared_messages`), and a unit depends on nothing but its message, its index and the
messages before it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from projections.cache.render import accel
from projections.cache.render.canonical import Framing, HashedUnits, Mixes, chain_units, hash_units
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.units import Units
from projections.normalized import JSON

CONTINUES = 2
"""An earlier request this many messages short of its whole list shared or fewer is taken as the
one the request continues, and no older one is compared: the messages it lacks are the ones that
carried its breakpoints, or the last turn a retry sends again."""


@dataclass(frozen=True, slots=True)
class Reusable:
    """A rendering as a later request may take from it."""

    api: str
    head: list[JSON]
    """What its units before the messages were rendered from: the tools and the system prompt as
    sent (Anthropic), the tools (OpenAI Chat)."""
    messages: list[JSON]
    """The message list as it was rendered (earlier turns' thinking dropped, where it was)."""
    dropped_thinking: bool
    """Whether ``messages`` had earlier turns' thinking dropped: a later request of the same model
    is rendered that way at once rather than as sent first."""
    start: int
    """Position of the first message unit."""
    units: Units
    rendered: RenderedRequest
    framing: Framing
    mixes: Mixes


@dataclass(frozen=True, slots=True)
class Splice:
    """Units ``start:start + length`` of ``source``, placed at ``at`` in a new request."""

    at: int
    source: Reusable
    start: int
    length: int


def shared_messages(old: list[JSON], new: list[JSON]) -> int:
    """How many leading messages two lists share, each serializing to the same canonical bytes.

    Python's ``==`` will not do: ``1 == 1.0 == True`` and ``0.0 == -0.0`` though each is written
    otherwise, so the C extension compares types exactly and floats bit for bit; without it the
    plain twin below does the same, more slowly.
    """
    if accel.native is not None:
        return accel.native.shared_prefix(old, new)
    return python_shared_prefix(old, new)


def python_shared_prefix(old: list[JSON], new: list[JSON]) -> int:
    """The plain-Python twin of the extension's ``shared_prefix``."""
    count = 0
    for a, b in zip(old, new, strict=False):
        if not same_json(a, b):
            break
        count += 1
    return count


def same_json(a: JSON, b: JSON, depth: int = 0) -> bool:
    """Whether two parsed JSON values serialize alike: same types, floats bit for bit, key order
    aside. Nesting past 200 levels counts as different, which only costs a render."""
    if a is b:
        return True
    if type(a) is not type(b) or depth > 200:
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, list):
        other = cast(list[JSON], b)
        return len(a) == len(other) and all(same_json(x, y, depth + 1) for x, y in zip(a, other, strict=True))
    if isinstance(a, dict):
        theirs = cast(dict[str, JSON], b)
        return a.keys() == theirs.keys() and all(same_json(v, theirs[k], depth + 1) for k, v in a.items())
    if isinstance(a, str | int) and not isinstance(a, bool):
        return bool(a == b)
    return False  # True, False and None are singletons: equal only when identical


def take(
    units: Units, recent: Sequence[Reusable], api: str, messages: list[JSON]
) -> tuple[int, Splice | None]:
    """Splice onto ``units`` the units of the leading messages ``messages`` shares with the most
    similar of ``recent`` (most recent first). Returns how many messages were taken, and where their
    units came from (``None`` when they had none)."""
    best: Reusable | None = None
    taken = 0
    for candidate in recent:
        if candidate.api != api:
            continue
        count = shared_messages(candidate.messages, messages)
        if count > taken:
            best, taken = candidate, count
        if count and count >= len(candidate.messages) - CONTINUES:
            break
    if best is None:
        return 0, None
    source = best.units
    # The message units are in message order: the first unit of message ``taken`` ends the run.
    indexes = cast(list[int], source.message_indexes)
    end = bisect_left(indexes, taken, lo=best.start, hi=len(source.raws))
    if end == best.start:
        return taken, None
    units.finish()
    at = units.position()
    units.splice(source, best.start, end)
    return taken, Splice(at, best, best.start, end - best.start)


def take_head(units: Units, recent: Sequence[Reusable], api: str, head: list[JSON]) -> Splice | None:
    """Splice onto the empty ``units`` the tools and system units of the latest of ``recent`` whose
    ``head`` (its tools and system prompt as sent) equals this one's, and say where they came from;
    ``None`` when none does, and they are rendered."""
    for candidate in recent:
        if candidate.api == api and shared_messages(candidate.head, head) == len(head):
            if not candidate.start:
                return None
            units.splice(candidate.units, 0, candidate.start)
            return Splice(0, candidate, 0, candidate.start)
    return None


def hash_spliced(
    units: Units, framing: Framing, header: bytes, mixes: Mixes, splices: Sequence[Splice]
) -> HashedUnits:
    """Code points, block hashes and prefix hashes of a request some of whose units were spliced
    (``splices`` in position order).

    The units between the splices are serialized and hashed as
    :func:`~projections.cache.render.canonical.hash_units` would; the spliced ones keep their
    source's code points and block hashes, and its prefix hashes too when the chain reached them in
    the same state with the same framing and parameters, else are linked again from their block
    hashes.
    """
    chars: list[int] = []
    blocks: list[str] = []
    prefixes: list[str] = []
    chain, at = header, 0
    for splice in (*splices, None):
        end = splice.at if splice is not None else len(units.raws)
        if end > at:
            hashed = hash_units(
                units.stripped(at, end), _cut(framing, at, end), chain, _within(mixes, at, end)
            )
            chars += hashed[0]
            blocks += hashed[1]
            prefixes += hashed[2]
            chain = bytes.fromhex(prefixes[-1])
        if splice is None:
            break
        at = splice.at + splice.length
        linked = _link(splice, framing, chain, _within(mixes, splice.at, at))
        chars += splice.source.rendered.chars[splice.start : splice.start + splice.length]
        blocks += splice.source.rendered.block_hashes[splice.start : splice.start + splice.length]
        prefixes += linked
        chain = bytes.fromhex(linked[-1])
    return chars, blocks, prefixes


def _link(splice: Splice, framing: Framing, entering: bytes, mine: Mixes) -> list[str]:
    """The prefix hashes of the spliced units: their source's when the chain entered them alike."""
    source, start, end = splice.source, splice.start, splice.start + splice.length
    rendered = source.rendered
    source_entering = rendered.prefix_hashes[start - 1] if start else rendered.header_hash
    framed = _cut(framing, splice.at, splice.at + splice.length)
    if (
        entering.hex() == source_entering
        and mine == _within(source.mixes, start, end)
        and framed == _cut(source.framing, start, end)
    ):
        return rendered.prefix_hashes[start:end]
    return chain_units(rendered.block_hashes[start:end], framed, entering, mine)


def spliced_framing(units: Units, splices: Sequence[Splice]) -> Framing:
    """:meth:`Units.framing` of a request some of whose units were spliced: a spliced unit's tier
    and role bytes are its source's, and so is its message-start byte but at the splice's first
    unit, whose predecessor is another."""
    tiers, roles, starts = bytearray(), bytearray(), bytearray()
    at = 0
    for splice in (*splices, None):
        end = splice.at if splice is not None else len(units.raws)
        if end > at:
            for mine, part in zip((tiers, roles, starts), units.framing(at, end), strict=True):
                mine += part
        if splice is None:
            break
        at = splice.at + splice.length
        source = splice.source.framing
        shared = slice(splice.start, splice.start + splice.length)
        tiers += source[0][shared]
        roles += source[1][shared]
        starts += units.framing(splice.at, splice.at + 1)[2] + source[2][splice.start + 1 : shared.stop]
    return bytes(tiers), bytes(roles), bytes(starts)


def _cut(framing: Framing, start: int, end: int) -> Framing:
    tiers, roles, starts = framing
    return tiers[start:end], roles[start:end], starts[start:end]


def _within(mixes: Mixes, start: int, end: int | None = None) -> Mixes:
    """The mixes that join before units ``start:end``, their positions counted from ``start``."""
    return [(p - start, run) for p, run in mixes if p >= start and (end is None or p < end)]
