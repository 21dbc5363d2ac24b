"""Small hand-built logs for the web app's tests; the demo generator covers the realistic ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from projections.normalized import RequestRecord
from tests.projections.cache.whatif.sessions import clock_session

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def dsh_lines(
    session_id: str, *, turns: int, version: int = 4, system: str = "You are terse.", model: str = ""
) -> list[dict[str, Any]]:
    """A dsh log: a system prompt, then per turn a user message and an assistant reply with usage;
    with ``model``, a ``request/context`` naming it first, as the harness writes before its calls."""
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": version,
            "id": session_id,
            "createdAt": "2026-01-01T00:00:00Z",
            "cwd": "/work/project",
            "title": f"Session {session_id}",
        },
    ]
    events: list[dict[str, Any]] = [
        {
            "type": "system/message",
            "data": {"turn": 0, "step": 0, "message": {"role": "system", "content": system}},
            "surfaceOp": "append",
        },
    ]
    if model:
        events.append(
            {
                "type": "request/context",
                "data": {"provider": "deepseek-official", "model": model, "contextWindow": 1_000_000},
            }
        )
    for turn in range(1, turns + 1):
        events.append(
            {
                "type": "user/message",
                "data": {
                    "id": f"u{turn}",
                    "role": "user",
                    "content": f"question {turn}",
                    "source": {"kind": "user"},
                },
                "surfaceOp": "append",
            }
        )
        events.append(
            {
                "type": "assistant/message",
                "data": {
                    "turn": turn,
                    "step": 0,
                    "message": {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn}"}]},
                    "usage": {
                        "inputTokens": 10 * turn,
                        "cacheReadTokens": 1000 * (turn - 1),
                        "cacheWriteTokens": 1000,
                        "outputTokens": 5 * turn,
                    },
                },
                "surfaceOp": "append",
            }
        )
    for seq, event in enumerate(events):
        event["seq"] = seq
        event["time"] = BASE_MS + seq * 1000
        lines.append(event)
    return lines


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_dsh_log(path: Path, *, session_id: str, turns: int, version: int = 4, model: str = "") -> Path:
    return write_jsonl(path, dsh_lines(session_id, turns=turns, version=version, model=model))


def capture_line(record: RequestRecord) -> dict[str, Any]:
    """The record as an anthropic-capture line: the body as sent, the response with its usage."""
    usage = record.usage
    assert usage is not None
    assert record.started_at is not None
    assert record.first_token_at is not None
    return {
        "request": record.body,
        "response": {
            "id": record.key,
            "type": "message",
            "model": record.model,
            "usage": {
                "input_tokens": usage.uncached_input,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": usage.cache_write_5m,
                    "ephemeral_1h_input_tokens": usage.cache_write_1h,
                },
                "output_tokens": usage.output,
            },
        },
        "started_at": record.started_at.isoformat(),
        "first_token_at": record.first_token_at.isoformat(),
    }


def clock_log(tmp_path: Path) -> Path:
    """The hand-built clock session (:mod:`tests.projections.cache.whatif.sessions`) as a capture log."""
    return write_jsonl(tmp_path / "clock.jsonl", [capture_line(r) for r in clock_session()])
