"""The stable-prefix scenario: every in-place change appended after the history instead.

A request that changes its predecessor's prompt before that one's last written breakpoint (a
per-turn line in the system prompt, an edited or stripped message, reordered tools) makes the
provider write again everything after the change. In the scenario the change goes after the
history instead: the request sends its predecessor's prompt, as the scenario sent it, through that
one's last written breakpoint, and then what it adds. Token totals stay as recorded: the kept
prefix takes the predecessor's token counts, and what follows is scaled so the request sums to its
reported prompt.

The scenario's requests are built from the renderings as sent without touching content. Each one
is a head taken from its predecessor's scenario rendering, followed by the units of the request
as sent from some position on (its *tail*). A tail unit's prefix id is the id of the head
(an *anchor*) joined to the unit's prefix hash as sent, which names everything before it: two
scenario prefixes are equal exactly when their heads and their units are. A request that only
extends its predecessor keeps that one's head and anchor, so a conversation without in-place
changes is sent exactly as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b
from itertools import islice
from operator import sub

from projections.cache.predict.cache_models import CacheFacts
from projections.cache.render.diff import shared_prefix_length
from projections.cache.render.rendered_request import Marker, RenderedRequest


@dataclass(frozen=True, slots=True)
class Placed:
    """A request as the scenario sends it (``rendered``) and how it maps onto the request as sent."""

    rendered: RenderedRequest
    input: RenderedRequest
    """The request as it came to the scenario: what the next request is compared with."""
    head: int
    """Units at the front of ``rendered`` taken from the predecessor's scenario rendering."""
    tail: int
    """Position, in the request as sent, of the first of its units that follow the head."""
    anchor: str
    """What joins every tail unit's prefix hash; empty when the request is sent as recorded."""
    written: int
    """Position, in the request as sent, of its last breakpoint long enough to be written; -1 none."""

    @property
    def moved(self) -> bool:
        """Whether the scenario sends anything other than the request as recorded."""
        return bool(self.anchor)


def written_position(rendered: RenderedRequest, facts: CacheFacts) -> int:
    """The last position whose prefix the request writes to the cache: its last breakpoint at or
    above the model's minimum, or its whole prompt where the provider caches without breakpoints."""
    if not facts.breakpoints:
        return len(rendered) - 1 if rendered.total_tokens >= facts.minimum_tokens else -1
    written = [
        m.position for m in rendered.markers if rendered.prefix_tokens(m.position) >= facts.minimum_tokens
    ]
    return max(written, default=-1)


def as_sent(rendered: RenderedRequest, facts: CacheFacts) -> Placed:
    """The request sent as recorded."""
    return Placed(rendered, rendered, 0, 0, "", written_position(rendered, facts))


def place(current: RenderedRequest, placed: Placed | None, facts: CacheFacts) -> Placed:
    """How the scenario sends ``current`` after its predecessor, which it sent as ``placed``;
    ``current`` as recorded where nothing can be kept (no predecessor, another model or
    parameters, nothing written, or a prompt shorter than the kept prefix)."""
    previous = placed.input if placed is not None else None
    if previous is None or placed is None or previous.header_hash != current.header_hash:
        return as_sent(current, facts)
    shared = shared_prefix_length(previous, current)
    written = placed.written
    if shared > written and shared >= placed.tail:
        # The request extends what its predecessor wrote: keep that one's head and go on.
        return _build(current, placed.rendered, placed.head, placed.tail, placed.anchor, facts)
    if written < 0:
        return as_sent(current, facts)
    kept = written - placed.tail + placed.head if written >= placed.tail else written
    start = len(previous) if len(current) > len(previous) else len(current) - 1
    start = max(start, shared)
    if start >= len(current) or current.total_tokens <= placed.rendered.prefix_tokens(kept):
        return as_sent(current, facts)
    head = placed.rendered
    anchor = blake2b(f"{head.prefix_hashes[kept]}:{start}".encode(), digest_size=16).hexdigest()
    return _build(current, head, kept + 1, start, anchor, facts)


def _build(
    current: RenderedRequest, head: RenderedRequest, size: int, start: int, anchor: str, facts: CacheFacts
) -> Placed:
    """``head``'s first ``size`` units, then ``current``'s units from ``start`` on, their token counts
    scaled so the request still sums to its reported prompt."""
    if not anchor:
        return as_sent(current, facts)
    head_tokens = head.cum_tokens[size]
    base = current.cum_tokens[start]
    target = current.total_tokens - current.unattributed_tokens - head_tokens
    sent = current.cum_tokens[-1] - base
    factor = target / sent if sent > 0 else 0.0
    # Running sums scaled, then rounded: each prefix stays within half a token of its share.
    cum = head.cum_tokens[: size + 1]
    cum += [head_tokens + round(factor * (c - base)) for c in islice(current.cum_tokens, start + 1, None)]
    if sent <= 0 and target > 0 and len(cum) > size + 1:
        cum[-1] = head_tokens + target
    groups = current.lookback_groups
    offset = (head.lookback_groups[size - 1] + 1 if size else 0) - groups[start]
    rendered = RenderedRequest(
        provider=current.provider,
        api=current.api,
        model=current.model,
        params=current.params,
        header_hash=current.header_hash,
        tiers=head.tiers[:size] + current.tiers[start:],
        roles=head.roles[:size] + current.roles[start:],
        message_indexes=head.message_indexes[:size] + current.message_indexes[start:],
        block_indexes=head.block_indexes[:size] + current.block_indexes[start:],
        message_ids=head.message_ids[:size] + current.message_ids[start:],
        kinds=head.kinds[:size] + current.kinds[start:],
        block_hashes=head.block_hashes[:size] + current.block_hashes[start:],
        prefix_hashes=head.prefix_hashes[:size] + list(map(anchor.__add__, current.prefix_hashes[start:])),
        chars=head.chars[:size] + current.chars[start:],
        raws=head.raws[:size] + current.raws[start:],
        lookback_groups=head.lookback_groups[:size] + [g + offset for g in groups[start:]],
        markers=_markers(current.markers, size, start),
        warnings=current.warnings,
        tokens=list(map(sub, islice(cum, 1, None), cum)),
        cum_tokens=cum,
        unattributed_tokens=current.unattributed_tokens,
    )
    return Placed(rendered, current, size, start, anchor, written_position(current, facts))


def _markers(markers: tuple[Marker, ...], size: int, start: int) -> tuple[Marker, ...]:
    """The request's markers where its units now sit: a tail unit's moved with it, a marker before
    the tail kept in the head at its place (the tools and system prompt sit where they did)."""
    moved: dict[int, Marker] = {}
    for marker in markers:
        position = (
            marker.position - start + size if marker.position >= start else min(marker.position, size - 1)
        )
        moved.setdefault(position, Marker(position, marker.ttl, marker.automatic))
    return tuple(moved[p] for p in sorted(moved))
