"""Claude Code transcript lines written as Claude Code 2.1 writes them, for the incremental tests.

One call spans a line per content block, sharing ``message.id`` and ``requestId``; its first line
carries a partial ``output_tokens`` and its last the final count; tool results follow as user lines.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

SESSION = "5f1d0c6e-8a45-4c4e-9a43-2b7f0d7a9c11"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _base(kind: str, uuid: str, seconds: float, session: str) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/project",
        "sessionId": session,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
    }


def line(value: dict[str, Any]) -> bytes:
    """One transcript line with its newline."""
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def prompt(n: int, text: str, *, session: str = SESSION) -> bytes:
    """The user's prompt of turn ``n``."""
    value = _base("user", f"user-{n}", n * 60, session)
    value["message"] = {"role": "user", "content": text}
    return line(value)


def call(n: int, *, read: int, write: int, output: int = 120, session: str = SESSION) -> list[bytes]:
    """The lines of call ``n``: a text block, then a tool call, then the tool's result."""
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
        "service_tier": "standard",
    }
    message = {
        "model": "claude-opus-4-6",
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "stop_reason": None,
    }
    text = _base("assistant", f"text-{n}", n * 60 + 5, session)
    text["requestId"] = f"req_{n:04d}"
    text["message"] = {
        **message,
        "content": [{"type": "text", "text": f"Looking at file {n}."}],
        "usage": {**usage, "output_tokens": 2},
    }
    tool = _base("assistant", f"tool-{n}", n * 60 + 9, session)
    tool["requestId"] = f"req_{n:04d}"
    tool["message"] = {
        **message,
        "content": [
            {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "Read", "input": {"path": f"f{n}.py"}}
        ],
        "usage": {**usage, "output_tokens": output},
    }
    result = _base("user", f"result-{n}", n * 60 + 10, session)
    result["message"] = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:04d}", "content": f"print({n})"}],
    }
    return [line(text), line(tool), line(result)]


def conversation(calls: int, *, first: int = 1, session: str = SESSION) -> list[bytes]:
    """A prompt and ``calls`` calls, each reading what the one before it wrote."""
    lines = [prompt(first, "Read the files one by one.", session=session)]
    for n in range(first, first + calls):
        lines += call(n, read=20_000 + 500 * n, write=500, session=session)
    return lines
