"""Render records: what a request promised the cache, one entry per breakpoint (DESIGN §6.2)."""

from __future__ import annotations

from dataclasses import dataclass

from projections.cache.attribution_block import attribution_block, blind_hashes
from projections.cache.rendered_request import RenderedRequest, Tier


@dataclass(frozen=True, slots=True)
class RecordMarker:
    """One breakpoint of a render record."""

    ordinal: int
    position: int
    tier: Tier
    identity: str
    prefix_hash: str
    prefix_tokens: int
    ttl: str
    blind_hash: str | None = None
    """The prefix's hash without Claude Code's attribution block, for a marker past one."""
    attribution: str = ""
    """The attribution block the request sent, with ``blind_hash``."""


@dataclass(frozen=True, slots=True)
class RenderRecord:
    """Every breakpoint of one request in order, with the prefix each one would write."""

    markers: tuple[RecordMarker, ...]

    @property
    def last(self) -> RecordMarker | None:
        """The breakpoint furthest into the prompt, or ``None`` when there is none."""
        return max(self.markers, key=lambda m: m.position, default=None)


def render_record(rendered: RenderedRequest) -> RenderRecord:
    """The render record of a rendered request: ordinal, position, identity, prefix hash and tokens,
    and past an attribution block the hash without it (what another session's request would read
    but for its own block, see :mod:`projections.cache.attribution`)."""
    block = attribution_block(rendered)
    blind = blind_hashes(rendered, block) if block is not None else [None] * len(rendered)
    markers = tuple(
        RecordMarker(
            ordinal=ordinal,
            position=marker.position,
            tier=rendered.tiers[marker.position],
            identity=rendered.identity(marker.position),
            prefix_hash=rendered.prefix_hashes[marker.position],
            prefix_tokens=rendered.prefix_tokens(marker.position),
            ttl=marker.ttl,
            blind_hash=blind[marker.position],
            attribution=block.text if block is not None and blind[marker.position] else "",
        )
        for ordinal, marker in enumerate(rendered.markers)
    )
    return RenderRecord(markers)
