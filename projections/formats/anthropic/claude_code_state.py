"""A Claude Code :class:`Transcript`'s state between two lines, as JSON, so a grown transcript is read
from where the last read stopped (see :mod:`projections.formats.reading.resume`).

What a transcript carries from line to line: the numbering of events, calls, turns and steps; the
surface and the meter's price of each of its nodes (a compaction states what it replaces); the
names of the tools called (a tool result is named after its call); the call whose lines are not
all in yet and the tool results held behind it; the calls already emitted (a straggler line is
counted once); an open compaction; the last model.
"""

from __future__ import annotations

from projections.formats.anthropic.claude_code_transcript import OpenCompaction, PendingCall, Transcript
from projections.formats.reading.resume import time_from_json, time_to_json, usage_from_json, usage_to_json
from projections.normalized import JSON

STATE_VERSION = 1
"""Bumped when the state's shape changes; a state of another version is not resumed from."""


def transcript_state(transcript: Transcript) -> dict[str, JSON]:
    """What ``transcript`` must carry to the next line, as JSON."""
    pending = transcript.pending
    done_keys = transcript.done_keys
    return {
        "version": STATE_VERSION,
        "seq": transcript.seq,
        "ordinal": transcript.ordinal,
        "turn": transcript.turn,
        "step": transcript.step,
        "surface": list(transcript.surface),
        "prices": [[seq, price] for seq, price in transcript.prices.items()],
        "tool_names": dict(transcript.tool_names),
        "pending": _call_state(pending) if pending is not None else None,
        "held": [[value, number] for value, number in transcript.held],
        "done_keys": [[*key, list(prompt) if prompt else None] for key, prompt in done_keys.items()],
        "compaction": _compaction_state(transcript.compaction),
        "model": transcript.model,
        "ended_at": time_to_json(transcript.session.ended_at),
    }


def transcript_restore(transcript: Transcript, state: dict[str, JSON]) -> None:
    """Put ``transcript`` back in the ``state`` :func:`transcript_state` took."""
    transcript.seq = state["seq"]
    transcript.ordinal = state["ordinal"]
    transcript.turn = state["turn"]
    transcript.step = state["step"]
    transcript.surface = list(state["surface"])
    transcript.prices = {seq: price for seq, price in state["prices"]}
    transcript.tool_names = dict(state["tool_names"])
    pending = state["pending"]
    transcript.pending = _call_from(pending) if pending is not None else None
    transcript.held = [(value, number) for value, number in state["held"]]
    transcript.done_keys = {
        (message_id, request_id): tuple(prompt) if prompt else None
        for message_id, request_id, prompt in state["done_keys"]
    }
    compaction = state["compaction"]
    transcript.compaction = OpenCompaction(*compaction) if compaction is not None else None
    transcript.model = state["model"]
    transcript.session.ended_at = time_from_json(state["ended_at"])


def _compaction_state(compaction: OpenCompaction | None) -> list[JSON] | None:
    if compaction is None:
        return None
    return [compaction.compaction_id, compaction.pre_tokens, compaction.turn]


def _call_state(call: PendingCall) -> dict[str, JSON]:
    return {
        "key": list(call.key),
        "message_id": call.message_id,
        "request_id": call.request_id,
        "model": call.model,
        "first_line": call.first_line,
        "started_at": time_to_json(call.started_at),
        "time": time_to_json(call.time),
        "blocks": call.blocks,
        "usage": usage_to_json(call.usage),
        "output": call.output,
        "client_version": call.client_version,
    }


def _call_from(state: dict[str, JSON]) -> PendingCall:
    message_id, request_id = state["key"]
    return PendingCall(
        key=(message_id, request_id),
        message_id=state["message_id"],
        request_id=state["request_id"],
        model=state["model"],
        first_line=state["first_line"],
        started_at=time_from_json(state["started_at"]),
        time=time_from_json(state["time"]),
        blocks=list(state["blocks"]),
        usage=usage_from_json(state["usage"]),
        output=state["output"],
        client_version=state["client_version"],
    )
