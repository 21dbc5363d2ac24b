"""The surface fold: which events the model currently sees, in order (DESIGN §4.1).

The surface is a list of node seqs. ``"append"`` adds the event's seq at the end; a replace swaps an
inclusive run of current nodes for the event's node. Each replacement node remembers the seqs it
shadowed (its ``sourceEventSeqs``, or the run it replaced when the log does not list them), so a page
can show what a compaction checkpoint stands for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from projections.events import APPEND, Replace, fold_error, surface_op
from projections.folds.append_vector import AppendVector
from projections.normalized import EventRecord

_NO_SOURCES: Mapping[int, tuple[int, ...]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Surface:
    """The current surface: node seqs in order, and what each replacement node shadowed."""

    nodes: AppendVector[int] = field(default_factory=AppendVector)
    shadowed_by: Mapping[int, tuple[int, ...]] = field(default_factory=lambda: _NO_SOURCES)

    def seqs(self) -> tuple[int, ...]:
        """The node seqs in surface order."""
        return tuple(self.nodes)


def resolve_range(nodes: Sequence[int], op: Replace, event: EventRecord) -> tuple[int, int]:
    """The inclusive positions in ``nodes`` that a replacement names, in either spelling."""
    if op.by_seq or _start_end_name_seqs(nodes, op, event):
        first, last = ("startSeq", "endSeq") if op.by_seq else ("start", "end")
        start, end = _position_of(nodes, op.start, event, first), _position_of(nodes, op.end, event, last)
        if start > end:
            raise fold_error(
                event,
                "replace-out-of-range",
                f"{first} {op.start} comes after {last} {op.end} on the surface",
            )
        return start, end
    if not 0 <= op.start <= op.end < len(nodes):
        raise fold_error(
            event,
            "replace-out-of-range",
            f"replaces positions {op.start}..{op.end} of a surface of {len(nodes)} nodes",
        )
    return op.start, op.end


def apply_surface(surface: Surface, event: EventRecord) -> Surface:
    """The surface after ``event``; the same object when the event is not on the surface."""
    op = surface_op(event)
    if op is None:
        return surface
    if op == APPEND:
        return Surface(surface.nodes.append(event.seq), surface.shadowed_by)
    assert isinstance(op, Replace)
    start, end = resolve_range(surface.nodes, op, event)
    replaced = tuple(surface.nodes[start : end + 1])
    shadowed_by = dict(surface.shadowed_by)
    shadowed_by[event.seq] = event.source_event_seqs if event.source_event_seqs is not None else replaced
    return Surface(surface.nodes.splice(start, end, (event.seq,)), MappingProxyType(shadowed_by))


def fold_surface(events: Iterable[EventRecord], surface: Surface | None = None) -> Surface:
    """The surface after every event of ``events``, starting from ``surface`` (empty by default)."""
    current = surface if surface is not None else Surface()
    for event in events:
        current = apply_surface(current, event)
    return current


def _start_end_name_seqs(nodes: Sequence[int], op: Replace, event: EventRecord) -> bool:
    """Whether a ``{start, end}`` replacement names the seqs of its run's first and last node.

    The harness writes ``start``/``end`` as seqs and lists every node it shadows in
    ``sourceEventSeqs``; Cachescope's own logs write positions there (DESIGN §4.1). The sources tell
    the two apart: read as positions unless the run those positions name is not among the sources
    and the run the seqs name is.
    """
    sources = event.source_event_seqs
    if not sources:
        return False
    cited = frozenset(sources)
    if 0 <= op.start <= op.end < len(nodes) and cited.issuperset(nodes[op.start : op.end + 1]):
        return False
    if op.start not in cited or op.end not in cited or op.start not in nodes or op.end not in nodes:
        return False
    start, end = nodes.index(op.start), nodes.index(op.end)
    return start <= end and cited.issuperset(nodes[start : end + 1])


def _position_of(nodes: Sequence[int], seq: int, event: EventRecord, name: str) -> int:
    # Replacements usually touch recent nodes, so search from the end.
    for position in range(len(nodes) - 1, -1, -1):
        if nodes[position] == seq:
            return position
    raise fold_error(event, "replace-out-of-range", f"{name} {seq} is not a current surface node")
