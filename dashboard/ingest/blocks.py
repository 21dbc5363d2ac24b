"""Content-addressed block storage for rendered requests.

A request is stored as an ordered list of block hashes; each distinct block is written once. The
store remembers which hashes it has seen in this ingest, so a 200-turn conversation asks the
database about each block once, not once per turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dashboard.models import Block
from projections.normalized import RequestRecord

if TYPE_CHECKING:
    from projections.cache.render.rendering import Renderer


@dataclass(frozen=True)
class StoredRendering:
    """What a Request row keeps of its rendering."""

    params: dict[str, Any]
    units: list[list[Any]]
    markers: list[dict[str, Any]]
    warnings: list[str]


class BlockStore:
    def __init__(self) -> None:
        self._known: set[str] = set()
        self._written: set[str] = set()  # written inside the open transaction, not yet committed
        self._pending: dict[str, Block] = {}
        self._renderer: Renderer | None = None

    def render(self, record: RequestRecord) -> StoredRendering:
        """Render ``record``'s body into units, queue its unseen blocks, and return the row's fields.

        A unit row is ``[block hash, tier, role, message index, block index, message id, tokens]``;
        tokens are calibrated to the provider's reported prompt total when usage is present.
        """
        assert record.body is not None
        rendered = self._rendering().render(record.provider, record.api, record.body, usage=record.usage)
        # Consecutive requests of a conversation re-send their history: only the units whose hash
        # this store has not met yet are copied out of the rendering.
        for i, block_hash in enumerate(rendered.block_hashes):
            if block_hash not in self._pending and not self.has(block_hash):
                block = rendered.block(i)
                self._pending[block_hash] = Block(
                    hash=block.hash,
                    kind=block.kind,
                    canonical=block.canonical.decode("utf-8"),
                    chars=block.chars,
                    tokens=block.tokens,
                )
        units = [
            list(row)
            for row in zip(
                rendered.block_hashes,
                rendered.tiers,
                rendered.roles,
                rendered.message_indexes,
                rendered.block_indexes,
                rendered.message_ids,
                rendered.tokens,
                strict=True,
            )
        ]
        markers = [{"position": m.position, "ttl": m.ttl, "automatic": m.automatic} for m in rendered.markers]
        return StoredRendering(
            params=dict(rendered.params), units=units, markers=markers, warnings=list(rendered.warnings)
        )

    def _rendering(self) -> Renderer:
        """The renderer, made for the first request with a body: transcripts (most logs) have none,
        and an ingest of them need not load the render engine."""
        if self._renderer is None:
            from projections.cache.render.rendering import Renderer

            # Requests come in the order they were logged, so each takes the messages it shares
            # with the last few from their renderings.
            self._renderer = Renderer()
        return self._renderer

    def has(self, block_hash: str) -> bool:
        """True when the block is stored, or written by the open transaction."""
        return block_hash in self._known or block_hash in self._written

    def flush(self) -> None:
        """Write the queued blocks that the database does not hold yet."""
        if not self._pending:
            return
        # In hash order, so two transactions writing the same new blocks wait on each other in one
        # order and cannot deadlock on the unique index.
        hashes = sorted(self._pending)
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            existing = set(Block.objects.filter(hash__in=chunk).values_list("hash", flat=True))
            Block.objects.bulk_create(
                [self._pending[h] for h in chunk if h not in existing], ignore_conflicts=True
            )
        self._written.update(hashes)
        self._pending.clear()

    def commit(self) -> None:
        """The transaction that wrote the blocks has committed: they are known for good."""
        self._known |= self._written
        self._written.clear()

    def rollback(self) -> None:
        """The transaction was rolled back: forget what it wrote, so none is believed stored that is not."""
        self._written.clear()
        self._pending.clear()
