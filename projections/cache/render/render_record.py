"""Render records: what a request promised the cache, one entry per breakpoint (DESIGN §6.2)."""

from __future__ import annotations

from dataclasses import dataclass

from projections.cache.render.rendered_request import RenderedRequest, Tier


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


@dataclass(frozen=True, slots=True)
class RenderRecord:
    """Every breakpoint of one request in order, with the prefix each one would write."""

    markers: tuple[RecordMarker, ...]

    @property
    def last(self) -> RecordMarker | None:
        """The breakpoint furthest into the prompt, or ``None`` when there is none."""
        return max(self.markers, key=lambda m: m.position, default=None)


def render_record(rendered: RenderedRequest) -> RenderRecord:
    """The render record of a rendered request: ordinal, position, identity, prefix hash and tokens."""
    markers = tuple(
        RecordMarker(
            ordinal=ordinal,
            position=marker.position,
            tier=rendered.tiers[marker.position],
            identity=rendered.identity(marker.position),
            prefix_hash=rendered.prefix_hashes[marker.position],
            prefix_tokens=rendered.prefix_tokens(marker.position),
            ttl=marker.ttl,
        )
        for ordinal, marker in enumerate(rendered.markers)
    )
    return RenderRecord(markers)
