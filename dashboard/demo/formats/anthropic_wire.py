"""Anthropic Messages responses as they travel on the wire: a JSON body or a server-sent event stream."""

from __future__ import annotations

import json
from email.utils import format_datetime
from typing import Any

from dashboard.demo.conversation import Call

API_URL = "https://api.anthropic.com/v1/messages?beta=true"


def usage_json(call: Call, *, output_tokens: int | None = None) -> dict[str, Any]:
    """The response ``usage`` object of ``call`` (``output_tokens`` overrides the final count)."""
    usage = call.usage
    return {
        "input_tokens": usage.uncached_input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": call.output_tokens if output_tokens is None else output_tokens,
        "service_tier": "standard",
    }


def response_json(call: Call) -> dict[str, Any]:
    """The complete (non-streamed) response body of ``call``."""
    return {
        "id": call.message_id,
        "type": "message",
        "role": "assistant",
        "model": call.body["model"],
        "content": call.content,
        "stop_reason": call.stop_reason,
        "stop_sequence": None,
        "usage": usage_json(call),
    }


def sse_stream(call: Call) -> str:
    """The response of ``call`` as the server-sent event stream a streaming client receives."""
    events: list[tuple[str, dict[str, Any]]] = []
    start = {**response_json(call), "content": [], "stop_reason": None}
    start["usage"] = usage_json(call, output_tokens=1)
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(call.content):
        if block["type"] == "tool_use":
            opening: dict[str, Any] = {
                "type": "tool_use",
                "id": block["id"],
                "name": block["name"],
                "input": {},
            }
            pieces = _split(json.dumps(block["input"]), 14)
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in ["", *pieces]]
        else:
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _split(block["text"], 24)]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    final = {"stop_reason": call.stop_reason, "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": final, "usage": {"output_tokens": call.output_tokens}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(
        f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n" for name, data in events
    )


def request_headers(body_bytes: int, *, stream: bool) -> dict[str, str]:
    """The HTTP request headers of a CLI agent's call (the credential is never logged)."""
    headers = {
        "host": "api.anthropic.com",
        "connection": "keep-alive",
        "Accept": "application/json",
        "X-Stainless-Retry-Count": "0",
        "X-Stainless-Lang": "js",
        "X-Stainless-Package-Version": "0.51.0",
        "anthropic-version": "2023-06-01",
        "authorization": "Bearer sk-ant-REDACTED",
        "x-app": "cli",
        "User-Agent": "claude-cli/1.0.6 (external, cli)",
        "content-type": "application/json",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    }
    if stream:
        headers["x-stainless-helper-method"] = "stream"
    headers["content-length"] = str(body_bytes)
    return headers


def response_headers(call: Call, *, stream: bool) -> dict[str, str]:
    """The HTTP response headers of ``call``."""
    return {
        "Date": format_datetime(call.first_token, usegmt=True),
        "Content-Type": "text/event-stream; charset=utf-8" if stream else "application/json",
        "Transfer-Encoding": "chunked",
        "Connection": "keep-alive",
        "request-id": call.request_id,
        "via": "1.1 google",
        "Server": "cloudflare",
    }


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
