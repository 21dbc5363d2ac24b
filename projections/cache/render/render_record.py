"""Render records: what a request promised the cache, one entry per breakpoint (DESIGN §6.2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from projections.cache.render.attribution_block import attribution_block, blind_hashes
from projections.cache.render.rendered_request import RenderedRequest, Tier
from projections.normalized import JSON

SENT_MARKER_KEYS = ("ordinal", "tier", "position", "identity", "prefix_tokens", "ttl")
"""What a marker as sent shows: the explain JSON and the request page list exactly these."""


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
    automatic: bool = False
    """True for the breakpoint a top-level ``cache_control`` implies, which sits on no block."""
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


def render_record(rendered: RenderedRequest, *, blind: bool = False) -> RenderRecord:
    """The render record of a rendered request: ordinal, position, identity, prefix hash and tokens;
    with ``blind``, past an attribution block the hash without it too (what another session's
    request would read but for its own block, see :mod:`projections.cache.attribution`), which
    costs a pass over the units that only the stored record needs."""
    block = attribution_block(rendered) if blind else None
    positions = [marker.position for marker in rendered.markers]
    hashes = blind_hashes(rendered, block, positions) if block is not None else {}
    markers = tuple(
        RecordMarker(
            ordinal=ordinal,
            position=marker.position,
            tier=rendered.tiers[marker.position],
            identity=rendered.identity(marker.position),
            prefix_hash=rendered.prefix_hashes[marker.position],
            prefix_tokens=rendered.prefix_tokens(marker.position),
            ttl=marker.ttl,
            automatic=marker.automatic,
            blind_hash=hashes.get(marker.position),
            attribution=block.text if block is not None and marker.position in hashes else "",
        )
        for ordinal, marker in enumerate(rendered.markers)
    )
    return RenderRecord(markers)


def markers_sent(data: Mapping[str, JSON], *, has_body: bool) -> list[dict[str, JSON]] | None:
    """The cache markers a request carried as sent, from the render record its stored analysis
    keeps (``data["record"]``), each with :data:`SENT_MARKER_KEYS` and whether it is the automatic
    breakpoint of a top-level ``cache_control``; ``None`` when only the request's usage was logged,
    so what it carried is unknown.

    The first request of a lineage has no predecessor whose markers could be kept or lost, but it
    did send its own: this is the list that shows them.
    """
    record = data.get("record")
    if not has_body or not isinstance(record, list):
        return None
    sent: list[dict[str, JSON]] = []
    for marker in record:
        if isinstance(marker, dict):
            shown: dict[str, JSON] = {key: marker.get(key) for key in SENT_MARKER_KEYS}
            shown["automatic"] = bool(marker.get("automatic"))
            sent.append(shown)
    return sent
