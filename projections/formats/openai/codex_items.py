"""Codex ``ResponseItem`` payloads (``codex-rs/protocol/src/models.rs``) as dsh message blocks.

A rollout stores the Responses API items of the conversation: messages, reasoning, tool calls the
model made and the outputs the CLI sent back. Model outputs become the blocks of one
``assistant/message``; tool outputs become ``tool-result`` blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from projections.formats.anthropic.blocks import arguments_text
from projections.normalized import JSON

MODEL_OUTPUT_TYPES = frozenset(
    {"message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
"""Item types the model produces (a ``message`` only when its role is ``assistant``)."""
TOOL_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
"""Item types the CLI sends back to the model as the result of a tool call."""
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
)
"""Openings of the user-role messages the CLI injects itself (cwd, sandbox, AGENTS.md), not typed
by the user; they are prompt context and do not start a turn."""


def is_model_output(item: Mapping[str, JSON]) -> bool:
    """Whether a response item was produced by the model (and so belongs to a call's reply)."""
    kind = item.get("type")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in MODEL_OUTPUT_TYPES


def _content_block(part: JSON) -> JSON:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict):
        return {"type": "text", "text": json.dumps(part)}
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": str(part.get("text") or "")}
    if kind == "input_image":
        url = str(part.get("image_url") or "")
        head, _, data = url.partition(",")
        if head.startswith("data:") and head.endswith(";base64"):
            return {"type": "image", "mediaType": head[5:].removesuffix(";base64"), "data": data}
        return {"type": "image", "url": url}
    # Refusals and other parts are kept as the CLI wrote them.
    return dict(part)


def message_blocks(item: Mapping[str, JSON]) -> list[JSON]:
    """The blocks of a ``message`` item's ``content`` (a list of ``input_text`` / ``output_text`` / ...)."""
    content = item.get("content")
    if isinstance(content, list):
        return [_content_block(part) for part in content]
    if content is None:
        return []
    return [_content_block(content)]


def is_injected_context(item: Mapping[str, JSON]) -> bool:
    """Whether a user- or developer-role message was written by the CLI rather than typed by the user."""
    if item.get("role") in ("developer", "system"):
        return True
    texts = [
        b.get("text", "") for b in message_blocks(item) if isinstance(b, dict) and b.get("type") == "text"
    ]
    return bool(texts) and all(str(text).lstrip().startswith(CONTEXT_PREFIXES) for text in texts)


def _reasoning_text(item: Mapping[str, JSON]) -> str:
    parts: list[str] = []
    for key in ("summary", "content"):
        value = item.get(key)
        if isinstance(value, list):
            parts.extend(str(p.get("text") or "") for p in value if isinstance(p, dict) and p.get("text"))
    return "\n".join(parts)


def output_blocks(item: Mapping[str, JSON]) -> list[JSON]:
    """The dsh blocks of one model-output item; a reasoning item with only encrypted content gives none."""
    kind = item.get("type")
    if kind == "message":
        return message_blocks(item)
    if kind == "reasoning":
        text = _reasoning_text(item)
        return [{"type": "reasoning", "text": text}] if text else []
    if kind == "function_call":
        return [_tool_call(item.get("call_id"), item.get("name"), item.get("arguments"))]
    if kind == "custom_tool_call":
        # A freeform tool (apply_patch) takes raw text, not JSON arguments; it is kept as that text.
        return [_tool_call(item.get("call_id"), item.get("name"), item.get("input"))]
    if kind == "local_shell_call":
        return [_tool_call(item.get("call_id") or item.get("id"), "local_shell", item.get("action"))]
    if kind == "web_search_call":
        return [_tool_call(item.get("id"), "web_search", item.get("action"))]
    return []


def _tool_call(call_id: JSON, name: JSON, arguments: JSON) -> JSON:
    return {
        "type": "tool-call",
        "toolCallId": str(call_id or ""),
        "toolName": str(name or ""),
        "arguments": arguments_text(arguments if arguments is not None else {}),
    }


def tool_name(block: JSON) -> tuple[str, str] | None:
    """``(call id, tool name)`` of a ``tool-call`` block, to name the tool in its result later."""
    if isinstance(block, dict) and block.get("type") == "tool-call":
        return str(block.get("toolCallId", "")), str(block.get("toolName", ""))
    return None


def result_block(item: Mapping[str, JSON], tool_names: Mapping[str, str]) -> JSON:
    """The ``tool-result`` block of a ``function_call_output`` or ``custom_tool_call_output`` item.

    ``output`` is a string, a list of content items, or (older releases) ``{content, success}``.
    """
    call_id = str(item.get("call_id") or "")
    output = item.get("output")
    failed = False
    if isinstance(output, dict):
        failed = output.get("success") is False
        output = output.get("content_items") or output.get("content")
    if isinstance(output, list):
        content = [_content_block(part) for part in output]
    else:
        content = [{"type": "text", "text": "" if output is None else str(output)}]
    block: dict[str, JSON] = {
        "type": "tool-result",
        "toolCallId": call_id,
        "toolName": tool_names.get(call_id, ""),
        "content": content,
    }
    if failed:
        block["isError"] = True
    return block
