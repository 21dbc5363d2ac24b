"""Anthropic Messages content blocks converted into dsh message blocks (team dsh shapes)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from projections.normalized import JSON


def arguments_text(value: JSON) -> str:
    """Tool-call arguments as JSON text, serialized the way JavaScript's ``JSON.stringify`` does."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _inner_blocks(content: JSON) -> list[JSON]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_block(item, {}) for item in content]
    return [_block(content, {})]


def _block(block: JSON, tool_names: Mapping[str, str]) -> JSON:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "text": block.get("thinking", "")}
    if kind in ("tool_use", "server_tool_use"):
        return {
            "type": "tool-call",
            "toolCallId": block.get("id", ""),
            "toolName": block.get("name", ""),
            "arguments": arguments_text(block.get("input", {})),
        }
    if kind == "tool_result":
        call_id = block.get("tool_use_id", "")
        result: dict[str, JSON] = {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": tool_names.get(call_id, "") if isinstance(call_id, str) else "",
            "content": _inner_blocks(block.get("content")),
        }
        if block.get("is_error") is True:
            result["isError"] = True
        return result
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "base64":
            return {
                "type": "image",
                "mediaType": source.get("media_type", ""),
                "data": source.get("data", ""),
            }
    # Any other block (documents, redacted thinking, server results) is kept as the provider wrote it.
    return block


def to_dsh_blocks(content: JSON, tool_names: Mapping[str, str] | None = None) -> list[JSON]:
    """dsh blocks for an Anthropic ``content`` (a string is one text block).

    ``tool_names`` maps tool-use ids to tool names so a ``tool-result`` block can name its tool.
    """
    names = tool_names or {}
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_block(block, names) for block in content]
    return [_block(content, names)]
