"""Which conversation each request of a session belongs to, decided from the request bodies.

A lineage is a chain of requests each continuing an earlier one. The rule, applied to requests in
start order, among requests the importer gave the same role (``main``, ``side``, ``subagent``):

1. A request continues the earlier request whose messages share the longest prefix with its own
   (at least the first message unit): it joins that request's lineage and is compared with it. On
   a tie the request whose messages are exactly that prefix wins (the turn this one extends, not a
   one-shot fork of it such as a compaction call), else the latest. An edit deep in the history
   keeps the request in its chain.
2. Else, a request whose tools and system prompt equal an earlier request's starts a new thread of
   that request's lineage (the conversation after a compaction or a ``/clear``, a second title call).
3. Else it starts a lineage of its own: a side call of another purpose (a title, a quota probe), or
   a subagent with its own system prompt and tools.

A compaction's summarising call (see :mod:`projections.cache.predict.compaction`) is compared with the
request it summarises, found by rules 1 and 2 (else the latest request of its role), but starts a
lineage of its own, ``compaction``, and no later request continues it: it is a one-shot fork.

Names: a lineage the importer calls ``side``, ``subagent`` or ``compaction`` keeps that name. Of
the importer's ``main`` lineages, the first that sends tools is ``main`` (the first of all when none
sends tools); later ones are ``subagent`` when they send tools and ``side`` when they do not. A
repeated name gets ``-2``, ``-3``, ... in order of first request.

Matching uses hashes of prefixes (one dictionary lookup per probe, a binary search per request),
so a session of thousands of requests is not compared pairwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

from projections.cache.predict.compaction import COMPACTION_LINEAGE, is_compaction_call
from projections.cache.render import accel
from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import RequestRecord


@dataclass(frozen=True, slots=True)
class LineageOf:
    """A request's lineage and the earlier request it is compared with (``None``: a new lineage)."""

    lineage: str
    parent: str | None


@dataclass(frozen=True, slots=True)
class _Chain:
    role: str
    tools: bool


class LineageAssigner:
    """:func:`assign_lineages` one request at a time, for an analysis that walks a session without
    holding every rendering: :meth:`add` gives each request its chain and parent as it comes,
    :meth:`names` the chains' names once every request came (a later chain can rename an earlier
    one: the first ``main`` chain that sends tools is ``main``).

    What it keeps grows with the distinct message prefixes of the session, not with the sum of
    its requests' lengths: a request that resends the history overwrites the entries it shares.
    """

    def __init__(self) -> None:
        # By role: each message prefix's latest request, and the requests whose messages are one.
        self._messages_index: dict[str, dict[int, str]] = {}
        self._whole: dict[str, dict[int, str]] = {}
        self._heads: dict[tuple[str, str], str] = {}
        self._chain_of: dict[str, int] = {}
        self._chains: list[_Chain] = []
        self._latest: dict[str, str] = {}

    def add(self, record: RequestRecord, rendered: RenderedRequest) -> tuple[int, str | None]:
        """The chain (an index into :meth:`names`) and the parent key of the next request in start order."""
        role = record.lineage
        prefixes = _message_prefixes(rendered)
        head = _head_hash(rendered)
        index = self._messages_index.setdefault(role, {})
        whole = self._whole.setdefault(role, {})
        parent = _longest_shared(prefixes, index, whole) or self._heads.get((role, head))
        if role == COMPACTION_LINEAGE or is_compaction_call(rendered):
            # Left out of the indexes: a later request continues the conversation, not its summary.
            chain = len(self._chains)
            self._chains.append(_Chain(COMPACTION_LINEAGE, "tools" in rendered.tiers))
            self._chain_of[record.key] = chain
            return chain, parent or self._summarised(prefixes, head)
        self._latest[role] = record.key
        if parent is None:
            chain = len(self._chains)
            self._chains.append(_Chain(role, "tools" in rendered.tiers))
        else:
            chain = self._chain_of[parent]
        self._chain_of[record.key] = chain
        index.update(zip(prefixes, repeat(record.key)))
        if prefixes:
            whole[prefixes[-1]] = record.key
        self._heads[(role, head)] = record.key
        return chain, parent

    def _summarised(self, prefixes: Sequence[int], head: str) -> str | None:
        """The main-thread request a summarising call of another role summarises: the one sharing
        its longest message prefix, else its tools and system prompt, else the latest."""
        found = _longest_shared(prefixes, self._messages_index.get("main", {}), self._whole.get("main", {}))
        return found or self._heads.get(("main", head)) or self._latest.get("main")

    def names(self) -> list[str]:
        """Each chain's name, by chain index (the module's docstring says how)."""
        return _names(self._chains)


def assign_lineages(
    records: Sequence[RequestRecord], renderings: Mapping[str, RenderedRequest]
) -> dict[str, LineageOf]:
    """Each rendered request's lineage and parent by request key (see the module's docstring).

    ``records`` are in start order; records without a rendering are left out.
    """
    assigner = LineageAssigner()
    placed: dict[str, tuple[int, str | None]] = {}
    for record in records:
        rendered = renderings.get(record.key)
        if rendered is not None:
            placed[record.key] = assigner.add(record, rendered)
    names = assigner.names()
    return {key: LineageOf(names[chain], parent) for key, (chain, parent) in placed.items()}


def is_side_call(lineage: str) -> bool:
    """Whether a lineage named by :func:`assign_lineages` (or an importer's role) is a side call's:
    ``side``, ``side-2``, ... The context charts leave those out, as they follow the main chain."""
    return lineage == "side" or lineage.startswith("side-")


def _message_prefixes(rendered: RenderedRequest) -> list[int]:
    """A hash of every prefix of the message units: ``[hash of unit 0, hash of units 0-1, ...]``.

    A 64-bit hash chained over the units' block hashes, built on Python's own: the keys live in
    one assigner and are never stored, and a BLAKE2b digest copied per unit cost five times as
    much, most of a long session's lineage work. The C extension chains them in one call; the plain
    twin chains Python's hash of (the previous link, the block hash), which gives other values but
    the same answers. A collision needs billions of distinct prefixes.
    """
    hashes = rendered.block_hashes[rendered.tier_start("messages") :]
    if accel.native is not None:
        return accel.native.rolling_hashes(hashes)
    out: list[int] = []
    link = 0
    for block_hash in hashes:
        link = hash((link, block_hash))
        out.append(link)
    return out


def _head_hash(rendered: RenderedRequest) -> str:
    """One hash of the tools and the system prompt (everything before the messages)."""
    head = rendered.block_hashes[: rendered.tier_start("messages")]
    return hashlib.blake2b("\n".join(head).encode(), digest_size=16).hexdigest()


def _longest_shared(
    prefixes: Sequence[int], index: Mapping[int, str], whole: Mapping[int, str]
) -> str | None:
    """The earlier request sharing the longest message prefix (one unit at least): the one whose
    messages are exactly that prefix, else the latest.

    Shared prefixes nest, so a binary search finds the longest in ``log n`` lookups.
    """
    lo, hi = 0, len(prefixes)  # the first lo prefixes are shared; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if prefixes[mid - 1] in index:
            lo = mid
        else:
            hi = mid - 1
    if not lo:
        return None
    shared = prefixes[lo - 1]
    return whole.get(shared) or index[shared]


def _names(chains: Sequence[_Chain]) -> list[str]:
    """Each chain's name (the module's docstring says how)."""
    main_chains = [i for i, chain in enumerate(chains) if chain.role == "main"]
    with_tools = [i for i in main_chains if chains[i].tools]
    main = with_tools[0] if with_tools else (main_chains[0] if main_chains else None)
    bases: list[str] = []
    for i, chain in enumerate(chains):
        if chain.role != "main":
            bases.append(chain.role)
        elif i == main:
            bases.append("main")
        else:
            bases.append("subagent" if chain.tools else "side")
    seen: dict[str, int] = {}
    names: list[str] = []
    for base in bases:
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return names
