"""One Claude Code transcript's lines, in order, turned into dsh events and request records.

:mod:`projections.formats.anthropic.claude_code` finds the sessions and subagents of a transcript file and
feeds each one's lines here. The lines of one API call (one per content block, sharing
``message.id`` and ``requestId``) are held until the call is whole, then written as one
``assistant/message`` and one :class:`RequestRecord`; compactions and tool results become their own
events.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from projections.client_version import client_version
from projections.formats.anthropic.blocks import to_dsh_blocks
from projections.formats.reading.event_sequence import EventSequence
from projections.formats.reading.times import parse_time
from projections.normalized import (
    JSON,
    EventRecord,
    Lineage,
    LineError,
    RequestRecord,
    SessionImport,
    SessionItem,
    Usage,
)
from projections.prices import PriceError, event_price
from projections.usage import UsageError, anthropic_usage, usage_to_dsh

SYNTHETIC_MODEL = "<synthetic>"
"""The model named on lines the client wrote itself; they are not calls."""


Prompt = tuple[int | None, int | None, int | None]
"""Uncached input, cache read and cache write of a call."""


def _prompt(usage: Usage) -> Prompt:
    """The prompt buckets of a usage, which every line of one call reports alike."""
    return (usage.uncached_input, usage.cache_read, usage.cache_write)


def _client_version(value: dict[str, JSON]) -> str:
    """The Claude Code release that wrote a transcript line (its ``version``)."""
    version = value.get("version")
    return client_version("claude-code", version) if isinstance(version, str) else ""


@dataclass(slots=True)
class PendingCall:
    """A call whose lines are still coming in."""

    key: tuple[str, str]
    message_id: str
    request_id: str
    model: str
    first_line: int
    started_at: datetime | None
    time: datetime | None
    blocks: list[JSON] = field(default_factory=list)
    usage: Usage | None = None
    output: int = -1
    client_version: str = ""


@dataclass(slots=True)
class OpenCompaction:
    """A compaction boundary whose summary has not come yet."""

    compaction_id: str
    pre_tokens: int | None
    turn: int


class Transcript(EventSequence):
    """Turns transcript lines, in order, into dsh events and request records."""

    def __init__(self, path: str, lineage: Lineage, session: SessionImport) -> None:
        super().__init__()
        self.path = path
        self.lineage: Lineage = lineage
        self.session = session
        self.ordinal = 0
        self.turn = 0
        self.step = 0
        self.surface: list[int] = []
        self.prices: dict[int, int] = {}
        """The meter's price of each surface node, so a compaction can state what it replaces."""
        self.tool_names: dict[str, str] = {}
        self.pending: PendingCall | None = None
        self.held: list[tuple[dict[str, JSON], int]] = []
        self.done_keys: dict[tuple[str, str], Prompt | None] = {}
        """Calls already emitted, with the prompt usage they were counted with."""
        self.compaction: OpenCompaction | None = None
        self.model = ""

    def _noted(self, event: EventRecord) -> None:
        """Keep the surface and its prices for a compaction's claim, and the session's last time."""
        if event.surface_op == "append":
            self.surface.append(event.seq)
        if event.surface_op is not None:
            try:
                self.prices[event.seq] = event_price(event)
            except PriceError:
                # The fold reports an unpriceable message at its own seq; a claim cannot price it either.
                self.prices[event.seq] = 0
        if event.time is not None:
            self.session.ended_at = event.time

    def _time(self, value: dict[str, JSON], number: int) -> tuple[datetime | None, LineError | None]:
        try:
            return parse_time(value.get("timestamp")), None
        except ValueError as error:
            return None, LineError(self.path, number, "timestamp", str(error))

    def feed(self, value: dict[str, JSON], number: int) -> Iterator[SessionItem]:
        """The items one transcript line completes (often none until its call ends)."""
        kind = value.get("type")
        if kind not in ("user", "assistant", "system"):
            return
        is_summary = kind == "user" and value.get("isCompactSummary") is True
        if self.compaction is not None and not is_summary:
            yield from self._end_compaction(None, number, "no compact summary followed the boundary")
        time, bad_time = self._time(value, number)
        if bad_time is not None:
            yield bad_time
        if kind == "assistant":
            yield from self._assistant(value, number, time)
        elif kind == "user":
            yield from self._user(value, number, time, is_summary)
        elif value.get("subtype") == "compact_boundary":
            yield from self._flush()
            yield from self._boundary(value, number, time)

    def finish(self, *, growing: bool = False) -> Iterator[SessionItem]:
        """The items still held at the end of the transcript.

        ``growing``: the transcript may still be written, so a compaction boundary at its end is left
        open for the summary line that follows it, not ended as one without a summary. A call is
        emitted all the same, so that it is stored while the session waits for its user.
        """
        yield from self._flush()
        if self.compaction is not None and not growing:
            yield from self._end_compaction(None, None, "no compact summary followed the boundary")

    def _assistant(self, value: dict[str, JSON], number: int, time: datetime | None) -> Iterator[SessionItem]:
        message = value.get("message")
        if not isinstance(message, dict):
            yield LineError(self.path, number, "message", "an assistant line without a message object")
            return
        model = message.get("model")
        if model == SYNTHETIC_MODEL:
            return
        message_id = str(message.get("id") or value.get("uuid") or f"line-{number}")
        request_id = str(value.get("requestId") or "")
        key = (message_id, request_id)
        usage: Usage | None = None
        if message.get("usage") is not None:
            try:
                usage = anthropic_usage(message.get("usage"))
            except UsageError as error:
                yield LineError(self.path, number, f"message.usage.{error.field}", error.reason)
        if self.pending is None or self.pending.key != key:
            if key in self.done_keys:
                # A straggler of a call already emitted: its tokens are counted once. A straggler
                # whose prompt usage disagrees is a second call under the same ids, which is an error.
                counted = self.done_keys[key]
                if usage is not None and counted is not None and _prompt(usage) != counted:
                    yield LineError(
                        self.path,
                        number,
                        "message.usage",
                        f"call message.id {message_id!r} requestId {request_id!r} was already counted "
                        f"with prompt usage {counted} (input, cache read, cache write); this "
                        f"line reports {_prompt(usage)} and is not counted",
                    )
                return
            yield from self._flush()
            self.pending = PendingCall(
                key=key,
                message_id=message_id,
                request_id=request_id,
                model=str(model or ""),
                first_line=number,
                started_at=time,
                time=time,
                client_version=_client_version(value),
            )
        call = self.pending
        content = message.get("content")
        call.blocks.extend(content if isinstance(content, list) else to_dsh_blocks(content))
        call.time = time or call.time
        if usage is not None and (usage.output or 0) > call.output:
            call.usage = usage
            call.output = usage.output or 0

    def _flush(self) -> Iterator[SessionItem]:
        call = self.pending
        if call is None:
            return
        self.pending = None
        self.done_keys[call.key] = _prompt(call.usage) if call.usage is not None else None
        self.step += 1
        self.model = call.model or self.model
        for block in call.blocks:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                self.tool_names[str(block.get("id", ""))] = str(block.get("name", ""))
        data: dict[str, JSON] = {
            "turn": self.turn,
            "step": self.step,
            "message": {"role": "assistant", "content": to_dsh_blocks(call.blocks, self.tool_names)},
            "model": call.model,
            "requestId": call.request_id,
            "messageId": call.message_id,
        }
        if call.usage is not None:
            data["usage"] = {"cacheWrite1hTokens": 0, **usage_to_dsh(call.usage)}
        yield self._event("assistant/message", call.time, data, call.first_line, surface_op="append")
        yield RequestRecord(
            key=call.request_id or call.message_id,
            ordinal=self.ordinal,
            lineage=self.lineage,
            provider="anthropic",
            platform="anthropic",
            api="messages",
            model=call.model,
            started_at=call.started_at,
            usage=call.usage,
            line=call.first_line,
            client_version=call.client_version,
        )
        self.ordinal += 1
        held, self.held = self.held, []
        for value, number in held:
            time, _ = self._time(value, number)
            yield from self._tool_results(value, number, time)

    def _user(
        self, value: dict[str, JSON], number: int, time: datetime | None, is_summary: bool
    ) -> Iterator[SessionItem]:
        message = value.get("message")
        if not isinstance(message, dict):
            yield LineError(self.path, number, "message", "a user line without a message object")
            return
        content = message.get("content")
        blocks = content if isinstance(content, list) else to_dsh_blocks(content)
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results and len(results) == len(blocks) and not is_summary:
            if self.pending is not None:
                self.held.append((value, number))
            else:
                yield from self._tool_results(value, number, time)
            return
        yield from self._flush()
        if results:
            yield from self._tool_results(value, number, time)
        rest = [b for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        if is_summary:
            yield from self._summary(value, number, time, rest)
            return
        meta = value.get("isMeta") is True
        if not meta:
            self.turn += 1
            self.step = 0
        source: dict[str, JSON] = {"kind": "user", "meta": True} if meta else {"kind": "user"}
        data: dict[str, JSON] = {
            "id": str(value.get("uuid") or f"line-{number}"),
            "role": "user",
            "content": to_dsh_blocks(rest, self.tool_names),
            "source": source,
        }
        yield self._event("user/message", time, data, number, surface_op="append")

    def _tool_results(
        self, value: dict[str, JSON], number: int, time: datetime | None
    ) -> Iterator[SessionItem]:
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        uuid = str(value.get("uuid") or f"line-{number}")
        for index, block in enumerate(results):
            data: dict[str, JSON] = {
                "turn": self.turn,
                "step": self.step,
                "message": {
                    "id": uuid if len(results) == 1 else f"{uuid}:{index}",
                    "role": "tool",
                    "content": to_dsh_blocks([block], self.tool_names),
                },
            }
            yield self._event("tool/result", time, data, number, surface_op="append")

    def _boundary(self, value: dict[str, JSON], number: int, time: datetime | None) -> Iterator[SessionItem]:
        metadata = value.get("compactMetadata")
        pre_tokens = metadata.get("preTokens") if isinstance(metadata, dict) else None
        if pre_tokens is not None and (
            isinstance(pre_tokens, bool) or not isinstance(pre_tokens, int) or pre_tokens < 0
        ):
            yield LineError(
                self.path, number, "compactMetadata.preTokens", f"expected a count, got {pre_tokens!r}"
            )
            pre_tokens = None
        compaction_id = str(value.get("uuid") or f"line-{number}")
        self.compaction = OpenCompaction(compaction_id, pre_tokens, self.turn)
        yield self._event(
            "compaction/start", time, {"compactionId": compaction_id, "turn": self.turn}, number
        )

    def _summary(
        self, value: dict[str, JSON], number: int, time: datetime | None, blocks: list[JSON]
    ) -> Iterator[SessionItem]:
        if self.compaction is None:
            yield from self._boundary({"uuid": f"summary-{value.get('uuid', number)}"}, number, time)
        compaction = self.compaction
        assert compaction is not None
        shadowed = tuple(self.surface)
        dsh_blocks = to_dsh_blocks(blocks, self.tool_names)
        text = "\n".join(
            str(b.get("text", "")) for b in dsh_blocks if isinstance(b, dict) and b.get("type") == "text"
        )
        summary: dict[str, JSON] = {
            "compactionId": compaction.compaction_id,
            "summary": text,
            "shadowedSeqs": list(shadowed),
            # The claim is in the meter's units, like the surface it is taken from: the provider's
            # count of the compacted context (preTokens) is a different measure and is kept beside it.
            "shadowedTokenCount": sum(self.prices.pop(seq, 0) for seq in shadowed),
            "preTokens": compaction.pre_tokens,
            "provider": "anthropic",
            "model": self.model,
        }
        if shadowed:
            summary["shadowedRange"] = {"start": 0, "end": len(shadowed) - 1}
        yield self._event("compaction/summary", time, summary, number)
        checkpoint: dict[str, JSON] = {
            "id": str(value.get("uuid") or f"line-{number}"),
            "role": "user",
            "content": dsh_blocks,
            "source": {"kind": "plugin", "plugin": "compact"},
        }
        if shadowed:
            replace: JSON = {"op": "replace", "start": 0, "end": len(shadowed) - 1}
            yield self._event("user/message", time, checkpoint, number, surface_op=replace, sources=shadowed)
            self.surface = [self.seq - 1]
        else:
            yield self._event("user/message", time, checkpoint, number, surface_op="append")
        yield from self._end_compaction(time, number, None)

    def _end_compaction(
        self, time: datetime | None, number: int | None, error: str | None
    ) -> Iterator[SessionItem]:
        compaction = self.compaction
        if compaction is None:
            return
        self.compaction = None
        data: dict[str, JSON] = {"compactionId": compaction.compaction_id, "turn": compaction.turn}
        if error:
            data["error"] = error
        yield self._event("compaction/end", time, data, number or 0)
