"""Claude Code transcripts: one JSON line per message block, hook progress and bookkeeping records.

Faithful to what Claude Code writes: one API call spans several ``assistant`` lines (one per content
block) that share ``message.id`` and ``requestId``; every line of a call repeats the input and cache
figures, and all but the last carry a partial ``output_tokens``. Tool results are separate ``user``
lines with ``toolUseResult``. A compaction is a ``compact_boundary`` system line with
``compactMetadata.preTokens`` followed by an ``isCompactSummary`` user line. ``<synthetic>`` lines are
written by the client itself, not by a call.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from dashboard.demo import pools
from dashboard.demo.clock import iso_z
from dashboard.demo.conversation import Call, CompactionEntry, Conversation, UserEntry
from dashboard.demo.formats import anthropic_wire

Line = dict[str, Any]


@dataclass(slots=True)
class TranscriptContext:
    """Who writes the transcript and how: the fields every line repeats, and the client's habits."""

    rng: random.Random
    session_id: str
    cwd: str
    version: str
    git_branch: str = "main"
    sidechain: bool = False
    agent_id: str | None = None
    hooks: bool = True
    """Newer clients write hook ``progress`` lines and ``file-history-snapshot`` records."""
    inline: dict[str, list[Line]] = field(default_factory=dict)
    """Lines to insert right after the assistant line that holds the given tool_use id."""
    last_uuid: str | None = None


def transcript_lines(conv: Conversation, ctx: TranscriptContext) -> list[Line]:
    """The transcript lines of ``conv``'s timeline (side calls are not written by the client)."""
    lines: list[Line] = []
    owner: dict[str, str] = {}  # tool_use id → uuid of the assistant line that holds it
    turn_started: datetime | None = None
    boundary_uuid: str | None = None
    for entry in conv.timeline:
        if isinstance(entry, CompactionEntry):
            boundary_uuid = _compact_boundary(lines, ctx, entry)
        elif isinstance(entry, UserEntry):
            if entry.kind == "prompt":
                turn_started = entry.at
                _prompt(lines, ctx, entry)
            elif entry.kind == "summary":
                _summary(lines, ctx, entry, boundary_uuid)
            else:
                _tool_results(lines, ctx, entry, owner)
        elif entry.lineage != "side":
            _call(lines, ctx, entry, owner)
            if (
                entry.stop_reason == "end_turn"
                and turn_started is not None
                and ctx.hooks
                and not ctx.sidechain
            ):
                duration = round((entry.finished - turn_started).total_seconds() * 1000)
                _append(
                    lines,
                    ctx,
                    {"type": "system", "subtype": "turn_duration", "durationMs": duration, "isMeta": False},
                    entry.finished + timedelta(milliseconds=40),
                )
    return lines


def synthetic_error(ctx: TranscriptContext, moment: datetime, text: str) -> Line:
    """A ``<synthetic>`` assistant line: the client's own message, not a provider call."""
    message = {
        "id": pools.uuid4(ctx.rng),
        "model": "<synthetic>",
        "role": "assistant",
        "stop_reason": "stop_sequence",
        "stop_sequence": "",
        "type": "message",
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "server_tool_use": {"web_search_requests": 0},
            "service_tier": None,
        },
        "content": [{"type": "text", "text": text}],
    }
    line = _line(ctx, {"type": "assistant", "message": message, "isApiErrorMessage": True}, moment)
    ctx.last_uuid = line["uuid"]
    return line


def prompt_line(ctx: TranscriptContext, moment: datetime, text: str) -> Line:
    """A user prompt line outside a conversation timeline (e.g. a retry after an error)."""
    line = _line(ctx, {"type": "user", "message": {"role": "user", "content": text}}, moment)
    ctx.last_uuid = line["uuid"]
    return line


def write_transcript(path: Path, lines: list[Line]) -> int:
    """Write transcript ``lines`` to ``path`` as Claude Code does (compact JSON); returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")
    return len(lines)


def _line(ctx: TranscriptContext, fields: dict[str, Any], moment: datetime, parent: str | None = "") -> Line:
    line: Line = {
        "parentUuid": ctx.last_uuid if parent == "" else parent,
        "isSidechain": ctx.sidechain,
        "userType": "external",
        "cwd": ctx.cwd,
        "sessionId": ctx.session_id,
        "version": ctx.version,
        "gitBranch": ctx.git_branch,
    }
    if ctx.agent_id is not None:
        line["agentId"] = ctx.agent_id
    line.update(fields)
    line["uuid"] = pools.uuid4(ctx.rng)
    line["timestamp"] = iso_z(moment)
    return line


def _append(
    lines: list[Line],
    ctx: TranscriptContext,
    fields: dict[str, Any],
    moment: datetime,
    parent: str | None = "",
) -> Line:
    line = _line(ctx, fields, moment, parent)
    lines.append(line)
    ctx.last_uuid = line["uuid"]
    return line


def _prompt(lines: list[Line], ctx: TranscriptContext, entry: UserEntry) -> None:
    line = _line(ctx, {"type": "user", "message": entry.message}, entry.at)
    if ctx.hooks and not ctx.sidechain:
        snapshot = {"messageId": line["uuid"], "trackedFileBackups": {}, "timestamp": iso_z(entry.at)}
        lines.append(
            {
                "type": "file-history-snapshot",
                "messageId": line["uuid"],
                "snapshot": snapshot,
                "isSnapshotUpdate": False,
            }
        )
        line["permissionMode"] = "default"
    lines.append(line)
    ctx.last_uuid = line["uuid"]


def _summary(lines: list[Line], ctx: TranscriptContext, entry: UserEntry, boundary: str | None) -> None:
    fields = {
        "type": "user",
        "message": entry.message,
        "isVisibleInTranscriptOnly": True,
        "isCompactSummary": True,
    }
    _append(lines, ctx, fields, entry.at, parent=boundary)


def _compact_boundary(lines: list[Line], ctx: TranscriptContext, entry: CompactionEntry) -> str:
    fields = {
        "logicalParentUuid": ctx.last_uuid,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "level": "info",
        "compactMetadata": {"trigger": "auto", "preTokens": entry.pre_tokens},
    }
    return str(_append(lines, ctx, fields, entry.at, parent=None)["uuid"])


def _tool_results(lines: list[Line], ctx: TranscriptContext, entry: UserEntry, owner: dict[str, str]) -> None:
    for block in entry.message["content"]:
        tool_id = block["tool_use_id"]
        if ctx.hooks:
            hook = {
                "type": "hook_progress",
                "hookEvent": "PostToolUse",
                "hookName": "PostToolUse:Bash",
                "command": "callback",
            }
            _append(
                lines,
                ctx,
                {"type": "progress", "data": hook, "parentToolUseID": tool_id, "toolUseID": tool_id},
                entry.at,
            )
        output = block["content"]
        fields = {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
            "sourceToolAssistantUUID": owner.get(tool_id),
        }
        _append(lines, ctx, fields, entry.at, parent=owner.get(tool_id, ctx.last_uuid))


def _call(lines: list[Line], ctx: TranscriptContext, call: Call, owner: dict[str, str]) -> None:
    partial = min(call.output_tokens, ctx.rng.randint(1, 12))
    count = len(call.content)
    for index, block in enumerate(call.content):
        last = index == count - 1
        message = {
            "model": call.body["model"],
            "id": call.message_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": call.stop_reason if last else None,
            "stop_sequence": None,
            "usage": anthropic_wire.usage_json(call, output_tokens=None if last else partial),
        }
        moment = call.first_token + timedelta(milliseconds=350 * index)
        line = _append(
            lines, ctx, {"message": message, "requestId": call.request_id, "type": "assistant"}, moment
        )
        if block["type"] == "tool_use":
            owner[block["id"]] = line["uuid"]
            if ctx.hooks:
                hook = {
                    "type": "hook_progress",
                    "hookEvent": "PreToolUse",
                    "hookName": f"PreToolUse:{block['name']}",
                    "command": "callback",
                }
                lines.append(
                    _line(
                        ctx,
                        {
                            "type": "progress",
                            "data": hook,
                            "parentToolUseID": block["id"],
                            "toolUseID": block["id"],
                        },
                        moment,
                    )
                )
            inserted = ctx.inline.get(block["id"])
            if inserted:
                lines.extend(inserted)
