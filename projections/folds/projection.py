"""What a projection is: a pure fold over a session's events with a versioned, storable state (DESIGN §5)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from projections.normalized import JSON, EventRecord

S = TypeVar("S")
V = TypeVar("V")


class Projection(ABC, Generic[S, V]):
    """A fold ``init() → apply(state, event)* → view(state)`` under one state version.

    States are values: ``apply`` never changes the state it is given, so a state kept in a projection
    row or compared in a re-fold cannot be altered by a later event. ``serialize`` and
    ``deserialize`` turn a state into the ``val`` of a row ``{key, ver, seq, val}`` and back, so a
    fold resumes from a row at the cost of one ``apply`` per new event.
    """

    key: str
    state_version: int

    @abstractmethod
    def init(self) -> S:
        """The state before any event."""

    @abstractmethod
    def apply(self, state: S, event: EventRecord) -> S:
        """The state after ``event``; raises ``FoldError`` when the event breaks a rule."""

    @abstractmethod
    def view(self, state: S) -> V:
        """What pages show for ``state``; equal views mean two versions agree."""

    @abstractmethod
    def view_json(self, view: V) -> JSON:
        """``view`` as a JSON-able value, for fold-run reports."""

    @abstractmethod
    def serialize(self, state: S) -> JSON:
        """``state`` as a JSON-able value, the ``val`` of a projection row."""

    @abstractmethod
    def deserialize(self, value: JSON) -> S:
        """The state that :meth:`serialize` wrote as ``value``."""

    def __repr__(self) -> str:
        return f"<Projection {self.key} v{self.state_version}>"
