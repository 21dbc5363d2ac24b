"""The numbering of the dsh events a reader emits, shared by the Claude Code and Codex readers.

Each event takes the next ``seq`` in the order it is emitted. A reader that keeps track of the
surface (to state what a compaction replaces) notes each event in :meth:`EventSequence._noted`
before the next one is numbered.
"""

from __future__ import annotations

from datetime import datetime

from projections.normalized import JSON, EventRecord


class EventSequence:
    """Emits events numbered from 0 in the order they are made."""

    def __init__(self) -> None:
        self.seq = 0

    def _event(
        self,
        kind: str,
        time: datetime | None,
        data: dict[str, JSON],
        line: int,
        *,
        surface_op: JSON = None,
        sources: tuple[int, ...] | None = None,
    ) -> EventRecord:
        """The next event, numbered, from the ``line`` it was read on."""
        event = EventRecord(
            seq=self.seq,
            type=kind,
            time=time,
            data=data,
            surface_op=surface_op,
            source_event_seqs=sources,
            line=line,
        )
        self._noted(event)
        self.seq += 1
        return event

    def _noted(self, event: EventRecord) -> None:
        """What a reader keeps of each event it emits; nothing unless a reader says otherwise."""
