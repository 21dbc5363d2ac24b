"""Anthropic captures from a logging proxy (``{request, response, started_at, first_token_at}``) and
connectome-host call logs (``llm-calls.<iso>.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashboard.demo.clock import iso_z
from dashboard.demo.conversation import Call
from dashboard.demo.formats import anthropic_wire


def capture_line(call: Call) -> dict[str, Any]:
    """One proxy capture: the request body as sent, the response body and the timing."""
    return {
        "request": call.body,
        "response": anthropic_wire.response_json(call),
        "started_at": iso_z(call.started),
        "first_token_at": iso_z(call.first_token),
    }


def connectome_line(call: Call) -> dict[str, Any]:
    """One connectome-host call record with full payloads on.

    ``timestamp`` is written when the call ends; agent turns stream (``kind: "stream"``).
    """
    body = call.body
    system = body.get("system") or []
    return {
        "type": "call",
        "kind": "stream" if body.get("stream") else "complete",
        "timestamp": iso_z(call.finished),
        "durationMs": round((call.finished - call.started).total_seconds() * 1000),
        "requestSummary": {
            "model": body["model"],
            "messageCount": len(body["messages"]),
            "systemChars": sum(len(block["text"]) for block in system),
            "toolCount": len(body.get("tools", [])),
            "maxTokens": body["max_tokens"],
        },
        "rawRequest": body,
        "rawResponse": anthropic_wire.response_json(call),
    }


def write_captures(path: Path, calls: list[Call]) -> int:
    """Write ``calls`` as proxy captures; returns the number of lines."""
    return _write(path, [capture_line(call) for call in calls])


def write_connectome_log(path: Path, calls: list[Call]) -> int:
    """Write ``calls`` as a connectome-host ``llm-calls`` log; returns the number of lines."""
    return _write(path, [connectome_line(call) for call in calls])


def _write(path: Path, records: list[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
    return len(records)
