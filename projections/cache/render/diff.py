"""Diff of a request against the previous request of its lineage (DESIGN §6.2).

The first changed unit is found from the prefix-hash lists alone (a binary search: prefix hashes
agree up to the first change and never again), so an unchanged history costs nothing however long
it is. Only the one changed unit is opened to find the first differing byte.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from projections.cache.render.render_record import RecordMarker, render_record
from projections.cache.render.rendered_request import TIERS, RenderedRequest, Tier
from projections.providers.mechanics import TTL_SECONDS

MarkerState = Literal["kept", "broken", "expired", "out-of-reach", "below-minimum"]


@dataclass(frozen=True, slots=True)
class ChangedUnit:
    """The first unit at which two requests differ."""

    position: int
    tier: Tier
    identity: str
    byte_offset: int | None
    """First differing byte inside the unit's canonical bytes; ``None`` when only its framing
    (the header, the role or the message boundary) differs."""
    header_changed: bool = False


@dataclass(frozen=True, slots=True)
class MarkerStatus:
    """What became of one breakpoint of the previous request."""

    marker: RecordMarker
    status: MarkerState
    why: str


@dataclass(frozen=True, slots=True)
class TierShare:
    """Tokens of one tier inside the prefix shared with the previous request, and the rest."""

    shared: int
    rest: int


@dataclass(frozen=True, slots=True)
class RequestDiff:
    """A request compared with its predecessor: where it changed, what survived, what the wire allows."""

    first_change: ChangedUnit | None
    shared_units: int
    """Units at the head of this request identical (with their framing) to the previous request's."""
    markers: tuple[MarkerStatus, ...]
    wire_allows: int
    cacheability: dict[Tier, TierShare]


def shared_prefix_length(prev: RenderedRequest, cur: RenderedRequest) -> int:
    """Number of leading units the two requests share, found by comparing hashes only."""
    n = min(len(prev), len(cur))
    a, b = prev.prefix_hashes, cur.prefix_hashes
    if prev.header_hash == cur.header_hash:
        if n == 0 or a[n - 1] == b[n - 1]:
            return n
        lo, hi = 0, n - 1  # invariant: a[hi] != b[hi]; everything before lo agrees
        while lo < hi:
            mid = (lo + hi) // 2
            if a[mid] == b[mid]:
                lo = mid + 1
            else:
                hi = mid
        return lo
    # A different header changes every prefix hash; fall back to the content and framing.
    for i in range(n):
        if (
            prev.block_hashes[i] != cur.block_hashes[i]
            or prev.roles[i] != cur.roles[i]
            or prev.tiers[i] != cur.tiers[i]
            or (prev.message_indexes[i] != cur.message_indexes[i])
        ):
            return i
    return n


def first_changed_byte(old: bytes, new: bytes) -> int | None:
    """Offset of the first differing byte, or ``None`` when the two are equal."""
    if old == new:
        return None
    n = min(len(old), len(new))
    lo, hi = 0, n  # the first lo bytes agree; a difference lies at or before hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[lo:mid] == new[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def first_change(prev: RenderedRequest, cur: RenderedRequest, shared: int) -> ChangedUnit | None:
    """The first changed unit given the shared length; ``None`` when ``cur`` only appends to ``prev``."""
    if prev.header_hash != cur.header_hash:
        # A new model or new cache-keying parameters re-key every prefix: the change is at the head.
        if not len(cur):
            return ChangedUnit(0, prev.tiers[0], prev.identity(0), None, True) if len(prev) else None
        return ChangedUnit(0, cur.tiers[0], cur.identity(0), None, True)
    header_changed = False
    if shared >= len(prev):
        return None
    if shared < len(cur):
        offset = None
        if shared < len(prev):
            offset = first_changed_byte(prev.canonical(shared), cur.canonical(shared))
        return ChangedUnit(shared, cur.tiers[shared], cur.identity(shared), offset, header_changed)
    # The request ends inside the previous one: the change is the removal of prev's unit here.
    return ChangedUnit(shared, prev.tiers[shared], prev.identity(shared), 0, header_changed)


def reachable(cur: RenderedRequest, position: int, lookback: int) -> bool:
    """Whether a breakpoint of ``cur`` looks back far enough to find an entry ending at ``position``."""
    group = cur.lookback_groups[position]
    return any(
        m.position >= position and cur.lookback_groups[m.position] - group < lookback for m in cur.markers
    )


def diff_requests(
    prev: RenderedRequest,
    cur: RenderedRequest,
    *,
    minimum: int = 0,
    lookback: int = 20,
    elapsed: timedelta | None = None,
    expired_hashes: Collection[str] | None = None,
) -> RequestDiff:
    """Compare ``cur`` with the previous request of its lineage.

    ``minimum`` is the model's minimum cacheable prefix, ``lookback`` the provider's window in
    positions. Expiry is judged from ``expired_hashes`` (entries the cache model saw expire) when
    given, otherwise from ``elapsed`` (start to start) against each marker's TTL.
    """
    shared = shared_prefix_length(prev, cur)
    change = first_change(prev, cur, shared)
    if prev.header_hash != cur.header_hash:
        shared = 0
    statuses: list[MarkerStatus] = []
    wire_allows = 0
    for marker in render_record(prev).markers:
        status, why = _marker_status(
            marker, prev, cur, shared, change, minimum, lookback, elapsed, expired_hashes
        )
        statuses.append(MarkerStatus(marker, status, why))
        if status == "kept":
            wire_allows = max(wire_allows, marker.prefix_tokens)
    return RequestDiff(change, shared, tuple(statuses), wire_allows, cacheability(cur, shared))


def _marker_status(
    marker: RecordMarker,
    prev: RenderedRequest,
    cur: RenderedRequest,
    shared: int,
    change: ChangedUnit | None,
    minimum: int,
    lookback: int,
    elapsed: timedelta | None,
    expired_hashes: Collection[str] | None,
) -> tuple[MarkerState, str]:
    if marker.prefix_tokens < minimum:
        return "below-minimum", f"prefix of {marker.prefix_tokens} tokens is below the minimum of {minimum}"
    if marker.position >= shared:
        where = f"{change.identity} (position {change.position})" if change else "the end"
        return "broken", f"the prefix changed before it, first at {where}"
    if expired_hashes is not None:
        if marker.prefix_hash in expired_hashes:
            return "expired", f"the {marker.ttl} entry expired before this request started"
    elif elapsed is not None and elapsed.total_seconds() > TTL_SECONDS[marker.ttl]:
        return "expired", f"{elapsed.total_seconds():.0f} s since the previous request, TTL {marker.ttl}"
    if not reachable(cur, marker.position, lookback):
        return "out-of-reach", f"no breakpoint of this request lies within {lookback} positions after it"
    return "kept", "unchanged and reachable"


def cacheability(cur: RenderedRequest, shared: int) -> dict[Tier, TierShare]:
    """Tokens per tier inside the shared prefix (cacheable) and after it (re-processed)."""
    cum = cur.cum_tokens
    shares: dict[Tier, TierShare] = {}
    for tier in TIERS:
        # Tiers are contiguous and in prefix order, so two boundary look-ups bound each one.
        start = cur.tier_start(tier)
        later = TIERS[TIERS.index(tier) + 1 :]
        end = cur.tier_start(later[0]) if later else len(cur)
        cut = min(max(shared, start), end)
        shares[tier] = TierShare(shared=cum[cut] - cum[start], rest=cum[end] - cum[cut])
    return shares
