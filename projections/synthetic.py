"""Synthetic session logs that follow the dsh shapes, for tests, property checks and benchmarks.

A :class:`LogBuilder` writes events with contiguous seqs and keeps its own model of the surface, so
replacements can be named by position or by seq and metering events state exact prices unless told
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.normalized import JSON, EventRecord
from projections.prices import event_price


@dataclass(slots=True)
class Node:
    """A node of the builder's surface model."""

    seq: int
    tokens: int
    system: bool


@dataclass(slots=True)
class LogBuilder:
    """Appends events to a log and tracks the surface they form."""

    events: list[EventRecord] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)

    @property
    def next_seq(self) -> int:
        """The seq the next event gets."""
        return len(self.events)

    def event(
        self,
        kind: str,
        data: dict[str, JSON],
        surface_op: JSON = None,
        source_event_seqs: tuple[int, ...] | None = None,
        ignorable: bool = False,
    ) -> EventRecord:
        """Append any event as given."""
        event = EventRecord(
            seq=self.next_seq,
            type=kind,
            time=None,
            data=data,
            surface_op=surface_op,
            source_event_seqs=source_event_seqs,
            ignorable=ignorable,
        )
        self.events.append(event)
        return event

    def system(self, text: str) -> EventRecord:
        """Append a system prompt."""
        return self._append("system/message", _message_data("system/message", text))

    def user(self, text: str) -> EventRecord:
        """Append a user message."""
        return self._append("user/message", _message_data("user/message", text))

    def assistant(
        self, text: str, usage: dict[str, JSON] | None = None, turn: int = 1, step: int = 0
    ) -> EventRecord:
        """Append an assistant message, with provider usage when given."""
        data = _message_data("assistant/message", text, turn=turn, step=step)
        if usage is not None:
            data["usage"] = usage
        return self._append("assistant/message", data)

    def tool_result(self, text: str) -> EventRecord:
        """Append a tool result."""
        return self._append("tool/result", _message_data("tool/result", text))

    def replace(
        self, kind: str, text: str, start: int, end: int, by_seq: bool = False, list_sources: bool = True
    ) -> EventRecord:
        """Replace surface positions ``start..end`` by a new node of type ``kind``."""
        replaced = self.nodes[start : end + 1]
        if by_seq:
            op: JSON = {"op": "replace", "startSeq": replaced[0].seq, "endSeq": replaced[-1].seq}
        else:
            op = {"op": "replace", "start": start, "end": end}
        sources = tuple(node.seq for node in replaced) if list_sources else None
        event = self.event(kind, _message_data(kind, text), surface_op=op, source_event_seqs=sources)
        self.nodes[start : end + 1] = [Node(event.seq, event_price(event), kind == "system/message")]
        return event

    def meter(
        self, kind: str, start: int, end: int, tokens: int | None = None, by_seq: bool = False
    ) -> EventRecord:
        """A ``compaction/summary`` or ``compaction/prune`` claiming positions ``start..end``.

        ``tokens`` defaults to the exact price of the range; ``shadowedRange`` is written in the same
        spelling the replacement will use.
        """
        replaced = self.nodes[start : end + 1]
        shadowed = [node.seq for node in replaced]
        exact = sum(node.tokens for node in replaced)
        shadowed_range = (
            {"start": shadowed[0], "end": shadowed[-1]} if by_seq else {"start": start, "end": end}
        )
        data: dict[str, JSON] = {
            "shadowedRange": shadowed_range,
            "shadowedSeqs": shadowed,
            "shadowedTokenCount": exact if tokens is None else tokens,
        }
        if kind == "compaction/summary":
            data = {"compactionId": f"c{self.next_seq}", "summary": [], **data, "provider": "p", "model": "m"}
        return self.event(kind, data)

    def compact(
        self, start: int, end: int, summary: str, tokens: int | None = None, by_seq: bool = False
    ) -> EventRecord:
        """A whole compaction: start, summary (the meter), the checkpoint replace, end."""
        self.event("compaction/start", {"compactionId": f"c{self.next_seq}", "turn": 1})
        self.meter("compaction/summary", start, end, tokens=tokens, by_seq=by_seq)
        checkpoint = self.replace("user/message", summary, start, end, by_seq=by_seq)
        self.event("compaction/end", {"compactionId": f"c{checkpoint.seq}", "turn": 1})
        return checkpoint

    def prune(self, position: int, text: str, tokens: int | None = None, by_seq: bool = False) -> EventRecord:
        """Tool-result pruning: the meter, then a one-node ``tool/result`` replace."""
        self.meter("compaction/prune", position, position, tokens=tokens, by_seq=by_seq)
        return self.replace("tool/result", text, position, position, by_seq=by_seq)

    def header(
        self, model: str = "m", provider: str = "p", system: str | None = None, tools: JSON = None
    ) -> EventRecord:
        """A ``request/header``; ``system`` only as version 0 logs carry it."""
        header: dict[str, JSON] = {"config": {"provider": provider, "model": model}}
        if system is not None:
            header["system"] = system
        if tools is not None:
            header["tools"] = tools
        return self.event("request/header", {"header": header, "reason": "initial"})

    def surface_total(self) -> int:
        """The exact price of the builder's surface."""
        return sum(node.tokens for node in self.nodes)

    def _append(self, kind: str, data: dict[str, JSON]) -> EventRecord:
        event = self.event(kind, data, surface_op="append")
        self.nodes.append(Node(event.seq, event_price(event), kind == "system/message"))
        return event


def _message_data(kind: str, text: str, turn: int = 1, step: int = 0) -> dict[str, JSON]:
    if kind == "user/message":
        return {"id": "u", "role": "user", "content": text, "source": {"kind": "user"}}
    role = {"system/message": "system", "assistant/message": "assistant", "tool/result": "tool"}[kind]
    content: JSON = text
    if kind == "tool/result":
        content = [
            {
                "type": "tool-result",
                "toolCallId": "t",
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
            }
        ]
    return {"turn": turn, "step": step, "message": {"role": role, "content": content}}
