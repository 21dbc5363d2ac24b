"""Reading a Codex rollout's lines, in order, into dsh events and request records (the format is
described in :mod:`projections.formats.openai.codex`, which finds a rollout's head and feeds its
lines here; the reader's state between two lines is :mod:`projections.formats.openai.codex_state`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from projections.client_version import client_version
from projections.formats.openai.codex_items import (
    TOOL_OUTPUT_TYPES,
    is_injected_context,
    is_model_output,
    message_blocks,
    output_blocks,
    result_block,
    tool_name,
)
from projections.formats.openai.codex_tokens import TokenCounter, TokenCountError
from projections.formats.reading.event_sequence import EventSequence
from projections.formats.reading.times import parse_time
from projections.formats.reading.titles import blocks_text, prompt_title
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
from projections.prices import event_price
from projections.usage import usage_to_dsh

ENVELOPE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
"""The ``type`` of an enveloped rollout line (``RolloutItem``); another type is tolerated and skipped."""
INHERITED_BURST_GAP = 1.0
"""Seconds of silence that end the parent history a fork copies in (written in one burst)."""


@dataclass(slots=True)
class RolloutHead:
    """A rollout's own facts, from its ``session_meta`` line (or the older layout's first record)."""

    session_id: str = ""
    cwd: str = ""
    started_at: datetime | None = None
    cli_version: str = ""
    provider: str = ""
    parent_id: str | None = None
    subagent: bool = False


@dataclass(slots=True)
class OpenCall:
    """The model output of a call whose ``token_count`` has not come yet."""

    first_line: int
    started_at: datetime | None
    time: datetime | None
    blocks: list[JSON] = field(default_factory=list)


class RolloutReader(EventSequence):
    """Turns rollout lines, in order, into dsh events and request records; its state between two
    lines is :func:`projections.formats.openai.codex_state.rollout_state`."""

    def __init__(self, path: str, session: SessionImport, head: RolloutHead) -> None:
        super().__init__()
        self.path = path
        self.session = session
        self.lineage: Lineage = session.lineage
        self.platform = head.provider.lower() or "openai"
        self.client_version = client_version("codex", head.cli_version)
        self.ordinal = 0
        self.turn = 0
        self.step = 0
        self.model = ""
        self.surface: dict[int, int] = {}
        """Seq and heuristic price of every message on the surface, for a compaction's claim."""
        self.tool_names: dict[str, str] = {}
        self.pending: OpenCall | None = None
        self.held: list[tuple[dict[str, JSON], int, datetime | None]] = []
        self.tokens = TokenCounter()
        self.just_compacted = False
        """A ``compacted`` line was the last thing read, so a ``context_compacted`` event repeats it."""
        self.inherited = False
        """Reading the parent's history that a fork or a spawned agent copies in after its own meta."""
        self.last_time: datetime | None = None

    def _noted(self, event: EventRecord) -> None:
        """Keep the price of each message on the surface, for a compaction's claim."""
        if event.surface_op == "append":
            self.surface[event.seq] = event_price(event)

    def feed(self, value: dict[str, JSON], number: int) -> Iterator[SessionItem]:
        """The items one rollout line completes (often none until its call ends)."""
        kind = value.get("type")
        payload = value.get("payload")
        if kind in ENVELOPE_TYPES:
            if not isinstance(payload, dict):
                yield LineError(self.path, number, "payload", f"a {kind} line without a payload object")
                return
        elif value.get("record_type") is not None or "instructions" in value:
            return  # the older layout's state lines and opening record
        elif isinstance(kind, str) and "payload" not in value:
            payload, kind = value, "response_item"  # the older layout's bare response items
        else:
            return
        time: datetime | None = None
        if "timestamp" in value:
            try:
                time = parse_time(value.get("timestamp"))
            except ValueError as error:
                yield LineError(self.path, number, "timestamp", str(error))
            else:
                self.session.ended_at = time  # a token count after the last message still ends later
                yield from self._end_of_inherited(time)
        if kind == "session_meta" and str(payload.get("id") or "") not in ("", self.session.external_id):
            # A copied ancestor's meta: its calls follow, counted already in the ancestor's own rollout.
            self.inherited = True
        if kind == "response_item":
            yield from self._response_item(payload, number, time)
        elif kind == "event_msg":
            yield from self._event_msg(payload, number, time)
        elif kind == "turn_context":
            self.model = str(payload.get("model") or self.model)
        elif kind == "compacted":
            yield from self._compacted(payload, number, time)
        elif kind == "session_meta" and payload.get("model"):
            self.model = str(payload["model"])

    def finish(self) -> Iterator[SessionItem]:
        """The items still held at the end of the rollout.

        In a log that counts tokens, a call still open at the end is most likely being written: it
        is left out, so that reading the grown file later stores it once, with its usage. A call cut
        short by the user ended at its ``turn_aborted`` already.
        """
        if self.tokens.previous_total is None:
            yield from self._flush(None, None)

    def _response_item(
        self, item: dict[str, JSON], number: int, time: datetime | None
    ) -> Iterator[SessionItem]:
        kind = item.get("type")
        if is_model_output(item):
            self.just_compacted = False
            if self.pending is not None and self.held:
                # Tool outputs went back to the model since this call's output, so this item belongs
                # to the next call, and the current one ended without a token count.
                yield from self._flush(None, None)
            if self.pending is None:
                self.pending = OpenCall(first_line=number, started_at=time, time=time)
            self.pending.blocks.extend(output_blocks(item))
            self.pending.time = time or self.pending.time
        elif kind in TOOL_OUTPUT_TYPES:
            if self.pending is not None:
                self.held.append((item, number, time))
            else:
                yield self._tool_result(item, number, time)
        elif kind == "message":
            self.just_compacted = False
            yield from self._flush(None, None)
            yield from self._user(item, number, time)
        # Ghost snapshots (the CLI's undo commits) and encrypted compaction items are not content.

    def _user(self, item: dict[str, JSON], number: int, time: datetime | None) -> Iterator[SessionItem]:
        injected = is_injected_context(item)
        if not injected:
            self.turn += 1
            self.step = 0
            first = self.turn == 1  # the turn count goes on across a resumed read; a title does not
            if first and not self.session.title and not self.inherited and item.get("role") == "user":
                # Titled as the CLI's resume picker shows it: by the first prompt the user typed.
                self.session.title = prompt_title(blocks_text(message_blocks(item)))
        source: dict[str, JSON] = {"kind": "user", "meta": True} if injected else {"kind": "user"}
        data: dict[str, JSON] = {
            "id": f"line-{number}",
            "role": "user",
            "content": message_blocks(item),
            "source": source,
        }
        yield self._event("user/message", time, data, number, surface_op="append")

    def _tool_result(self, item: dict[str, JSON], number: int, time: datetime | None) -> EventRecord:
        data: dict[str, JSON] = {
            "turn": self.turn,
            "step": self.step,
            "message": {
                "id": str(item.get("call_id") or f"line-{number}"),
                "role": "tool",
                "content": [result_block(item, self.tool_names)],
            },
        }
        return self._event("tool/result", time, data, number, surface_op="append")

    def _event_msg(
        self, payload: dict[str, JSON], number: int, time: datetime | None
    ) -> Iterator[SessionItem]:
        kind = payload.get("type")
        if kind == "token_count":
            try:
                usage = self.tokens.call_usage(payload)
            except TokenCountError as error:
                yield LineError(self.path, number, error.field, error.reason)
                return
            if usage is not None:
                self.just_compacted = False
                yield from self._flush(usage, (number, time))
        elif kind == "turn_aborted":
            yield from self._flush(None, None)  # an interrupted call: no token count will follow
        elif kind == "context_compacted":
            if not self.just_compacted:
                # A compaction the rollout records without its summary: the boundary alone is known.
                yield from self._flush(None, None)
                compaction_id = f"line-{number}"
                start: dict[str, JSON] = {"compactionId": compaction_id, "turn": self.turn}
                yield self._event("compaction/start", time, start, number)
                end: dict[str, JSON] = {"compactionId": compaction_id, "turn": self.turn}
                yield self._event("compaction/end", time, end, number)
            self.just_compacted = False
        # user_message, agent_message and agent_reasoning repeat response items for the UI.

    def _end_of_inherited(self, time: datetime) -> Iterator[SessionItem]:
        """Close the copied history at the first pause in it.

        The CLI writes a fork's copied history in one burst, every line stamped within milliseconds of
        the fork; the child's own first turn comes at least a second later.
        """
        last, self.last_time = self.last_time, time
        if self.inherited and last is not None and (time - last).total_seconds() >= INHERITED_BURST_GAP:
            yield from self._flush(None, None)
            self.inherited = False

    def _flush(
        self, usage: Usage | None, counted_at: tuple[int, datetime | None] | None
    ) -> Iterator[SessionItem]:
        """End the pending call; with ``usage``, a token count that found no pending output is a call too.

        A call of copied history stays on the surface (the child sends it again) but is no request of
        this session.
        """
        if self.inherited:
            usage = None
            counted_at = None
        call = self.pending
        if call is None and usage is None:
            yield from self._release_held()
            return
        if call is None:
            assert counted_at is not None
            # A call whose output the rollout does not keep (a compaction's summary request).
            call = OpenCall(first_line=counted_at[0], started_at=counted_at[1], time=counted_at[1])
        self.pending = None
        self.step += 1
        for block in call.blocks:
            named = tool_name(block)
            if named is not None:
                self.tool_names[named[0]] = named[1]
        if call.blocks or usage is not None:
            data: dict[str, JSON] = {
                "turn": self.turn,
                "step": self.step,
                "message": {"role": "assistant", "content": call.blocks},
                "model": self.model,
            }
            if usage is not None:
                data["usage"] = {"cacheWrite1hTokens": 0, **usage_to_dsh(usage)}
            yield self._event("assistant/message", call.time, data, call.first_line, surface_op="append")
        if self.inherited:
            yield from self._release_held()
            return
        yield RequestRecord(
            key=f"line-{call.first_line}",
            ordinal=self.ordinal,
            lineage=self.lineage,
            provider="openai",
            platform=self.platform,
            api="responses",
            model=self.model,
            started_at=call.started_at,
            usage=usage,
            line=call.first_line,
            client_version=self.client_version,
        )
        self.ordinal += 1
        yield from self._release_held()

    def _release_held(self) -> Iterator[SessionItem]:
        held, self.held = self.held, []
        for item, number, time in held:
            yield self._tool_result(item, number, time)

    def _compacted(
        self, payload: dict[str, JSON], number: int, time: datetime | None
    ) -> Iterator[SessionItem]:
        yield from self._flush(None, None)
        summary_text = str(payload.get("message") or "")
        blocks: list[JSON] = [{"type": "text", "text": summary_text}] if summary_text else []
        replacement = payload.get("replacement_history")
        if not blocks and isinstance(replacement, list):
            # A remote compaction keeps the new history instead of a summary: its messages' text.
            for item in replacement:
                if isinstance(item, dict) and item.get("type") == "message":
                    blocks.extend(message_blocks(item))
        compaction_id = f"line-{number}"
        yield self._event(
            "compaction/start", time, {"compactionId": compaction_id, "turn": self.turn}, number
        )
        shadowed = tuple(self.surface)
        # The fold checks the claim against the surface it replaces: the same heuristic price.
        shadowed_tokens = sum(self.surface.values())
        summary: dict[str, JSON] = {
            "compactionId": compaction_id,
            "summary": "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)),
            "shadowedSeqs": list(shadowed),
            "shadowedTokenCount": shadowed_tokens,
            "provider": "openai",
            "model": self.model,
        }
        if shadowed:
            summary["shadowedRange"] = {"start": 0, "end": len(shadowed) - 1}
        yield self._event("compaction/summary", time, summary, number)
        checkpoint: dict[str, JSON] = {
            "id": compaction_id,
            "role": "user",
            "content": blocks,
            "source": {"kind": "plugin", "plugin": "compact"},
        }
        if shadowed:
            replace: JSON = {"op": "replace", "start": 0, "end": len(shadowed) - 1}
            summed = self._event(
                "user/message", time, checkpoint, number, surface_op=replace, sources=shadowed
            )
            self.surface = {summed.seq: event_price(summed)}
            yield summed
        else:
            yield self._event("user/message", time, checkpoint, number, surface_op="append")
        yield self._event("compaction/end", time, {"compactionId": compaction_id, "turn": self.turn}, number)
        self.just_compacted = True
