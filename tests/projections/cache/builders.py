"""Hand-built Anthropic requests for the cache engine's tests."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from projections.normalized import RequestRecord, Usage

T0 = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SONNET = "claude-sonnet-4-20250514"
CC: dict[str, Any] = {"type": "ephemeral"}


def words(tag: str, chars: int) -> str:
    """Deterministic filler text of about ``chars`` characters, distinct per tag."""
    unit = f"{tag} lorem ipsum dolor sit amet "
    return (unit * (chars // len(unit) + 1))[:chars]


def tools(*names: str) -> list[dict[str, Any]]:
    """Tool definitions with a sizeable description each."""
    return [
        {"name": n, "description": words(f"tool {n}", 400), "input_schema": {"type": "object"}} for n in names
    ]


def conversation(turns: int, *, chars: int = 600) -> list[dict[str, Any]]:
    """Alternating user / assistant messages, each one text block."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": words(f"message {i}", chars)}],
        }
        for i in range(turns)
    ]


def image_block(tag: str) -> dict[str, Any]:
    """A small base64 image block."""
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": tag * 40}}


def body(
    messages: list[dict[str, Any]],
    *,
    marks: tuple[int, ...] = (),
    ttl: str | None = None,
    system: list[dict[str, Any]] | None = None,
    tool_defs: list[dict[str, Any]] | None = None,
    model: str = SONNET,
) -> dict[str, Any]:
    """A Messages request whose system prompt carries a marker and whose messages ``marks`` do too."""
    messages = copy.deepcopy(messages)
    control = dict(CC, ttl=ttl) if ttl else dict(CC)
    for index in marks:
        content = messages[index]["content"]
        content[-1]["cache_control"] = control
    if system is None:
        system = [{"type": "text", "text": words("system prompt", 8_000), "cache_control": control}]
    return {
        "model": model,
        "max_tokens": 1024,
        "tools": tool_defs if tool_defs is not None else tools("Bash", "Read"),
        "system": system,
        "messages": messages,
    }


def record(
    key: str,
    ordinal: int,
    request_body: dict[str, Any],
    *,
    minutes: float = 0.0,
    lineage: Any = "main",
    usage: Usage | None = None,
    first_token_after: float = 1.0,
) -> RequestRecord:
    """A request record started ``minutes`` after T0, answering ``first_token_after`` seconds later."""
    started = T0 + timedelta(minutes=minutes)
    return RequestRecord(
        key=key,
        ordinal=ordinal,
        lineage=lineage,
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=str(request_body["model"]),
        started_at=started,
        first_token_at=started + timedelta(seconds=first_token_after),
        body=request_body,
        usage=usage,
    )


def anthropic_usage(uncached: int, read: int, write: int, write_1h: int = 0) -> Usage:
    """Usage in Anthropic's buckets."""
    return Usage(uncached, read, write, write_1h, 10, "anthropic", {})
