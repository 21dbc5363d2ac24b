"""What a request's analysis says when the cause of its read is known from the traffic itself.

The predictor names a miss from the bytes (``prefix-changed@system:1``, …); two patterns of
Claude Code's traffic deserve their own words, with the figures that price them:

- a compaction (see :mod:`projections.cache.predict.compaction`): the summarising call is a one-shot fork
  whose cost depends on whether it kept the main thread's system prompt and tools, and the request
  after it is ``compacted`` — its history was replaced by design, so "append corrections instead of
  rewriting history" would be the wrong advice;
- Claude Code's attribution block (see :mod:`projections.cache.attribution`): where an earlier write
  shows the block alone kept the request from reading, the block is the cause — also for the first
  request of a session or subagent, which has no previous request to be compared with — and where
  the provider read on past a changed block, the endpoint ignores it and nothing was missed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from projections.cache.attribution import AttributionMiss
from projections.cache.explain.causes import REMEDIES, Cause, FirstChange
from projections.cache.predict.compaction import COMPACTED, COMPACTION_REWRITE, CompactionNote
from projections.cache.predict.materiality import is_material
from projections.cache.render.rendered_request import RenderedRequest


@dataclass(frozen=True, slots=True)
class Known:
    """What the traffic itself shows of a request's read: the attribution block, a compaction."""

    attribution: AttributionMiss | None
    compaction: CompactionNote | None


@dataclass(frozen=True, slots=True)
class Said:
    """What the analysis says of a request: label, its detail, materiality and the first change."""

    label: str | None
    detail: str
    material: bool
    change: FirstChange | None
    bound: int
    """The most the bytes allow the provider to read, for the ``model-error`` check."""


def with_known_causes(said: Said, rendered: RenderedRequest, known: Known) -> Said:
    """``said`` with the compaction's and the attribution block's words where they apply."""
    if known.compaction is not None:
        said = _compaction(said, known.compaction)
    if known.attribution is not None:
        said = _attribution(said, rendered, known.attribution)
    return said


def _compaction(said: Said, note: CompactionNote) -> Said:
    if note.role == "restart":
        label = said.label
        if label is None or label.startswith("prefix-changed@messages"):
            label = COMPACTED
        return replace(said, label=label, detail=note.detail())
    if is_material(note.reprocessed, note.prompt):
        return replace(said, label=COMPACTION_REWRITE, detail=note.detail(), material=True)
    return replace(said, detail=note.detail() if said.label is None else said.detail)


def _attribution(said: Said, rendered: RenderedRequest, miss: AttributionMiss) -> Said:
    change = said.change
    at_block = change is not None and change.position == miss.position
    if miss.ignored:
        # The provider read past the block: what changed in it cost nothing, and no remedy is due.
        cause = Cause("attribution-changed", miss.detail(), "")
        label = said.label
        if label is not None and label.startswith("prefix-changed@system") and (at_block or change is None):
            label = None
        return replace(
            said,
            label=label,
            material=said.material and label is not None,
            detail=miss.detail() if label is None else said.detail,
            change=_change_at(rendered, miss, cause, change) if at_block or change is None else change,
            bound=max(said.bound, miss.writer.tokens),
        )
    cause = Cause("attribution-changed", miss.detail(), REMEDIES["attribution-changed"])
    label = said.label
    if label is None or not label.startswith("prefix-changed"):
        label = f"prefix-changed@system:{miss.position}"
    material = said.material or is_material(miss.reprocessed, rendered.total_tokens)
    change = _change_at(rendered, miss, cause, change)
    return replace(said, label=label, material=material, detail=miss.detail(), change=change)


def _change_at(
    rendered: RenderedRequest, miss: AttributionMiss, cause: Cause, change: FirstChange | None
) -> FirstChange:
    """The first change at the attribution block with ``cause``: the diff's own where it found the
    block (keeping its byte), else one against the request that wrote the prefix."""
    if change is not None and change.position == miss.position:
        return replace(change, cause=cause)
    return FirstChange(miss.position, "system", rendered.identity(miss.position), None, cause)
