"""The order of a dsh log's events as they are read: seqs contiguous from 0, each event followed by
the provider call it records; and what that check carries from line to line, as JSON, so a grown
plain log is read from where the last read stopped (see :mod:`projections.formats.reading.resume`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from projections.events import current_spelling, is_known_event_type
from projections.formats.dsh.calls import DshCalls
from projections.formats.reading.resume import time_from_json, time_to_json
from projections.normalized import JSON, EventRecord, LineError, SessionImport, SessionItem

STATE_VERSION = 1
"""Of a plain log's reading state; a state of another version is not resumed from."""


@dataclass(slots=True)
class EventOrder:
    """The seq expected next, and whether lines were lost just before it (a gap is then theirs, not
    the log's)."""

    expected: int = 0
    lost_lines: bool = False

    def check(
        self, event: EventRecord, session: SessionImport, calls: DshCalls, path: str, number: int
    ) -> Iterator[SessionItem]:
        """``event`` and the call it records when its seq comes next; a line error when it repeats
        or leaves a gap (a gap makes the log unfoldable)."""
        expected = self.expected
        if event.seq == expected or (self.lost_lines and event.seq > expected):
            self.expected = event.seq + 1
            self.lost_lines = False
        elif event.seq < expected:
            reason = f"seq {event.seq} repeats an earlier event (expected seq {expected}); dropped"
            yield LineError(path, number, "seq", reason)
            return
        else:
            reason = f"seq {event.seq} leaves a gap after seq {expected - 1}; dropped"
            yield LineError(path, number, "seq", reason)
            if not session.unfoldable:
                session.unfoldable = f"seq {event.seq}: gap after seq {expected - 1}"
            self.expected = event.seq + 1
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
        """What reading the log carries to the next line, with the session's and the calls' part."""
        return {
            "version": STATE_VERSION,
            "expected": self.expected,
            "lost_lines": self.lost_lines,
            "unfoldable": session.unfoldable,
            "ended_at": time_to_json(session.ended_at),
            "calls": [calls.provider, calls.model, calls.ordinal],
        }

    def restore(self, state: dict[str, JSON], session: SessionImport, calls: DshCalls) -> None:
        """Put the reading back in the ``state`` :meth:`state` took."""
        self.expected, self.lost_lines = state["expected"], state["lost_lines"]
        session.unfoldable = state["unfoldable"]
        session.ended_at = time_from_json(state["ended_at"])
        calls.provider, calls.model, calls.ordinal = state["calls"]
