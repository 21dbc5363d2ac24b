"""The session timeline as a conversation: each event read as who said what.

User and assistant messages, tool calls and results, compactions, the system prompt and the host's
notes each become one item with a plain-text preview; a run of consecutive ``assistant/chunk``
events (the stream of a reply) folds into the message that follows it, or into one "streamed" item
when no message follows (a stream cut off by an error); a run of bookkeeping events (turn and step
marks, request headers, titles, client cache records, …) becomes one quiet item. Every event keeps
its raw JSON a click away on the page, so nothing is hidden, only folded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

PREVIEW_CHARS = 600
RAW_CHARS = 20_000
"""Characters of an event's raw JSON the page shows; the rest is a link away. One 50 MB message
made a 50 MB session page."""
CHUNK = "assistant/chunk"
CONVERSATION = {
    "user/message": ("user", "User"),
    "assistant/message": ("assistant", "Assistant"),
    "tool/call": ("tool-call", "Tool call"),
    "tool/result": ("tool-result", "Tool result"),
    "system/message": ("system", "System prompt"),
    "cache/log": ("note", "Host note"),
    "cache/request": ("call", "Provider call"),
}
"""Event types read as a turn of the conversation: (item kind, label)."""
COMPACTION_PREFIX = "compaction/"


class EventRow(Protocol):
    seq: int
    type: str
    time: datetime | None
    data: Any


@dataclass
class TimelineItem:
    """One line of the conversation and the events it shows, all of whose raw JSON it offers."""

    kind: str
    label: str
    text: str
    events: list[EventRow] = field(default_factory=list)
    chunks: list[EventRow] = field(default_factory=list)
    error: bool = False

    @property
    def main(self) -> EventRow:
        """The event the item is about: the message after its chunks, else the first event."""
        return self.events[-1] if self.chunks and len(self.events) > len(self.chunks) else self.events[0]

    @property
    def seq(self) -> int:
        return self.events[0].seq

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq

    @property
    def time(self) -> datetime | None:
        return self.main.time

    @property
    def own_events(self) -> list[EventRow]:
        """The events besides the collapsed chunks."""
        return [event for event in self.events if event not in self.chunks]

    @property
    def types(self) -> str:
        """The event types of a bookkeeping run, each once, in order."""
        return ", ".join(dict.fromkeys(event.type for event in self.events))


def timeline_items(events: Iterable[EventRow]) -> list[TimelineItem]:
    """The conversation items of ``events``, given in seq order (see the module)."""
    items: list[TimelineItem] = []
    chunks: list[EventRow] = []
    bookkeeping: list[EventRow] = []

    def flush_chunks() -> None:
        if chunks:
            items.append(_streamed(list(chunks)))
            chunks.clear()

    def flush_bookkeeping() -> None:
        if bookkeeping:
            items.append(TimelineItem("meta", "Bookkeeping", "", list(bookkeeping)))
            bookkeeping.clear()

    for event in events:
        if event.type == CHUNK:
            flush_bookkeeping()
            chunks.append(event)
            continue
        item = _conversation_item(event)
        if item is None:
            flush_chunks()
            bookkeeping.append(event)
            continue
        flush_bookkeeping()
        if item.kind == "assistant" and chunks:
            item.chunks, item.events = list(chunks), [*chunks, event]
            chunks.clear()
        else:
            flush_chunks()
        items.append(item)
    flush_chunks()
    flush_bookkeeping()
    return items


def _conversation_item(event: EventRow) -> TimelineItem | None:
    data = event.data if isinstance(event.data, dict) else {}
    if event.type.startswith(COMPACTION_PREFIX):
        return TimelineItem(
            "compaction", _compaction_label(event.type), _compaction_text(event.type, data), [event]
        )
    known = CONVERSATION.get(event.type)
    if known is None:
        return None
    kind, label = known
    if kind == "tool-call":
        name = data.get("name") or data.get("toolName")
        label = f"Tool call · {name}" if isinstance(name, str) and name else label
        return TimelineItem(kind, label, _preview(_arguments(data.get("arguments"))), [event])
    if kind == "tool-result":
        text, error = _tool_result(data)
        return TimelineItem(kind, label + (" (error)" if error else ""), _preview(text), [event], error=error)
    if kind == "note":
        line = data.get("line")
        return TimelineItem(kind, label, _preview(line if isinstance(line, str) else ""), [event])
    if kind == "call":
        return TimelineItem(
            kind, f"{label} · {data.get('model') or '?'}", _usage_text(data.get("usage")), [event]
        )
    message = data.get("message", data)
    return TimelineItem(kind, label, _preview(_content_text(message)), [event])


def _streamed(chunks: Sequence[EventRow]) -> TimelineItem:
    """Chunks no message followed: what they streamed, and whether the stream ended in an error."""
    parts: list[str] = []
    error = False
    for event in chunks:
        chunk = event.data.get("chunk") if isinstance(event.data, dict) else None
        if not isinstance(chunk, dict):
            continue
        for key in ("text", "argumentsDelta"):
            if isinstance(chunk.get(key), str):
                parts.append(chunk[key])
        reason = chunk.get("reason")
        if chunk.get("type") == "finish" and isinstance(reason, dict) and reason.get("kind") == "error":
            error = True
            failure = reason.get("failure")
            if isinstance(failure, dict) and isinstance(failure.get("message"), str):
                parts.append(f" [stream failed: {failure['message']}]")
    item = TimelineItem(
        "assistant", "Assistant (streamed, no message)", _preview("".join(parts)), list(chunks)
    )
    item.chunks, item.error = list(chunks), error
    return item


def _content_text(message: Any) -> str:
    """The text of a message's content: its text blocks, its reasoning marked, its tool calls named."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "reasoning" and isinstance(block.get("text"), str):
            parts.append(f"(thinking) {block['text']}")
        elif kind in ("tool-call", "tool_use"):
            name = block.get("toolName") or block.get("name") or "tool"
            parts.append(f"→ {name}({_arguments(block.get('arguments', block.get('input')))})")
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def _tool_result(data: dict[str, Any]) -> tuple[str, bool]:
    message = data.get("message", data)
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return (content if isinstance(content, str) else ""), False
    parts, error = [], False
    for block in content:
        if not isinstance(block, dict):
            continue
        error = error or block.get("isError") is True
        inner = block.get("content", block.get("text"))
        if isinstance(inner, str):
            parts.append(inner)
        elif isinstance(inner, list):
            parts.extend(str(part["text"]) for part in inner if isinstance(part, dict) and "text" in part)
    return "\n".join(parts), error


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _compaction_label(event_type: str) -> str:
    step = event_type.removeprefix(COMPACTION_PREFIX)
    return {"start": "Compaction started", "end": "Compaction ended", "summary": "Compaction summary"}.get(
        step, f"Compaction · {step}"
    )


def _compaction_text(event_type: str, data: dict[str, Any]) -> str:
    summary = data.get("summary")
    if isinstance(summary, list):
        summary = "\n".join(str(b.get("text", "")) for b in summary if isinstance(b, dict))
    if isinstance(summary, str):
        return _preview(summary)
    tokens = data.get("shadowedTokenCount")
    seqs = data.get("shadowedSeqs")
    if isinstance(tokens, int):
        shadowed = f" of {len(seqs)} event{'s' if len(seqs) != 1 else ''}" if isinstance(seqs, list) else ""
        return f"{tokens:,} tokens{shadowed} taken out of the context"
    return ""


def _usage_text(usage: Any) -> str:
    if not isinstance(usage, dict):
        return ""
    names = {
        "inputTokens": "uncached",
        "cacheReadTokens": "read",
        "cacheWriteTokens": "write",
        "outputTokens": "output",
    }
    return " · ".join(
        f"{label} {usage[key]:,}" for key, label in names.items() if isinstance(usage.get(key), int)
    )


def _preview(text: str) -> str:
    text = text.strip()
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def raw_json(event: EventRow) -> str:
    """An event's data as indented JSON, for its raw view; the template escapes it."""
    return json.dumps(event.data, ensure_ascii=False, indent=1, sort_keys=False, default=str)


def raw_json_shown(event: EventRow) -> tuple[str, int]:
    """:func:`raw_json` as the page shows it: at most :data:`RAW_CHARS`, and how many characters
    were left out (0 when none)."""
    text = raw_json(event)
    if len(text) <= RAW_CHARS:
        return text, 0
    return text[:RAW_CHARS] + "…", len(text) - RAW_CHARS
