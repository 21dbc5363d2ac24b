"""The order of a dsh log's events as they are read: seqs strictly increasing (gaps kept and reported,
:class:`~projections.formats.dsh.seqs.SeqOrder`), each event followed by the provider call it
records; and what that check carries from line to line, as JSON, so a grown plain log is read from
where the last read stopped (see :mod:`projections.formats.reading.resume`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from projections.events import current_spelling, is_known_event_type
from projections.formats.dsh.calls import DshCalls
from projections.formats.dsh.seqs import SeqOrder
from projections.formats.reading.resume import time_from_json, time_to_json
from projections.normalized import JSON, EventRecord, SessionImport, SessionItem

STATE_VERSION = 2
"""Of a plain log's reading state; a state of another version is not resumed from (version 1
expected contiguous seqs)."""


@dataclass(slots=True)
class EventOrder:
    """The seqs admitted so far, and the session's and the calls' part of the reading."""

    seqs: SeqOrder

    def check(self, event: EventRecord, session: SessionImport, calls: DshCalls) -> Iterator[SessionItem]:
        """``event`` and the call it records when its seq comes after the last one admitted; the
        line error that drops it when its seq repeats or goes back."""
        refused = self.seqs.admit(event)
        if refused is not None:
            yield refused
            return
        if not event.ignorable and not is_known_event_type(event.type) and not session.unfoldable:
            session.unfoldable = f"seq {event.seq}: unknown event type '{event.type}' without ignorable"
        if event.time is not None:
            session.ended_at = event.time
        yield event
        call = calls.observe(current_spelling(event))
        if call is not None:
            yield call

    def state(self, session: SessionImport, calls: DshCalls) -> dict[str, JSON]:
        """What reading the log carries to the next line, with the session's and the calls' part.
        The gaps already reported stay with the read that found them: a later read reports its own."""
        return {
            "version": STATE_VERSION,
            "previous": self.seqs.previous,
            "unfoldable": session.unfoldable,
            "ended_at": time_to_json(session.ended_at),
            "calls": [calls.provider, calls.model, calls.ordinal],
        }

    def restore(self, state: dict[str, JSON], session: SessionImport, calls: DshCalls) -> None:
        """Put the reading back in the ``state`` :meth:`state` took."""
        previous = state["previous"]
        self.seqs.previous = previous if isinstance(previous, int) else None
        session.unfoldable = state["unfoldable"]
        session.ended_at = time_from_json(state["ended_at"])
        calls.provider, calls.model, calls.ordinal = state["calls"]
