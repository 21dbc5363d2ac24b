"""claude-trace logs: one JSON line per HTTP exchange, the full request body and the raw response."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dashboard.demo.clock import epoch_s, iso_micro
from dashboard.demo.conversation import Call
from dashboard.demo.formats import anthropic_wire


def trace_line(call: Call) -> dict[str, Any]:
    """One claude-trace record: ``{request, response, logged_at}``.

    A streamed call keeps ``body: null`` beside the SSE text in ``body_raw``, as claude-trace does.
    """
    body_text = json.dumps(call.body, separators=(",", ":"))
    stream = bool(call.body.get("stream"))
    request = {
        "timestamp": epoch_s(call.started),
        "method": "POST",
        "url": anthropic_wire.API_URL,
        "headers": anthropic_wire.request_headers(len(body_text.encode()), stream=stream),
        "body": call.body,
    }
    response: dict[str, Any] = {
        "timestamp": epoch_s(call.finished),
        "status_code": 200,
        "headers": anthropic_wire.response_headers(call, stream=stream),
    }
    if stream:
        response["body"] = None
        response["body_raw"] = anthropic_wire.sse_stream(call)
    else:
        response["body"] = anthropic_wire.response_json(call)
    return {
        "request": request,
        "response": response,
        "logged_at": iso_micro(call.finished + timedelta(seconds=0.4)),
    }


def write_trace_log(path: Path, calls: list[Call]) -> int:
    """Write ``calls`` as a claude-trace log at ``path``; returns the number of lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for call in calls:
            out.write(json.dumps(trace_line(call), ensure_ascii=False) + "\n")
    return len(calls)
