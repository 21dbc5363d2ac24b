"""The harness's own context meter, re-stated independently of the engine for tests to compare with.

It reads a dsh log's raw JSON lines and follows the harness's ``contextBreakdown`` projection
(``packages/llm/token-meter/src/breakdown-projection.ts``, ``surface-projection.ts`` and
``estimate.ts`` in toninfo/deepseek-harness): system prompt and tool schemas from the newest
``request/header`` (last wins), messages as a running total of the surface, where an append adds its
message's price, a replacement armed by the metering event just before it adds its price minus the
claimed one, and any other replacement adds nothing. Nothing here calls Cachescope's engine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKED_MEMBERS = {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
SURFACE_TYPES = {"user/message", "assistant/message", "tool/result"}
METERING_TYPES = {"compaction/summary", "compaction/prune", "compact/summary", "compact/prune"}


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def quarter(text: str) -> int:
    """``Math.ceil(text.length / 4)``: JavaScript lengths count UTF-16 code units."""
    return math.ceil(utf16_units(text) / 4)


def stringify(value: Any) -> str:
    """``JSON.stringify`` for the values these logs hold (no floats): compact, keys in order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def content_tokens(blocks: list[Any]) -> int:
    """``estimateContent``: text and reasoning by their text, tool calls by name and arguments,
    tool results by their inner blocks, anything else by its JSON; each block plus 4."""
    tokens = 0
    for block in blocks:
        kind = block.get("type")
        if kind in ("text", "reasoning"):
            tokens += quarter(block["text"]) + 4
        elif kind == "tool-call":
            tokens += quarter(block["name"]) + quarter(block["arguments"]) + 4
        elif kind == "tool-result":
            tokens += content_tokens(block["content"]) + 4
        else:
            tokens += 4 + quarter(stringify(block))
    return tokens


def message_content(kind: str, data: dict[str, Any]) -> list[Any]:
    """The content of the message a surface event derives to; builds before 2026-07-28 wrote an
    assistant message's content and a tool result's fields inline instead of in ``message``."""
    if kind == "user/message":
        return data["content"]  # type: ignore[no-any-return]
    if "message" in data:
        return data["message"]["content"]  # type: ignore[no-any-return]
    if kind == "tool/result":
        return [{"type": "tool-result", "toolCallId": data["callId"], "content": data["content"]}]
    return data["content"]  # type: ignore[no-any-return]


def meter(lines: list[dict[str, Any]]) -> Iterator[tuple[int, int, int, int]]:
    """``(seq, systemTokens, toolsTokens, messageTokens)`` after every event of a log's lines."""
    system = tools = messages = 0
    claim: tuple[int, int, int] | None = None
    for line in lines[1:]:
        kind = line["type"]
        if kind in PACKED_MEMBERS:
            for k in range(len(line["data"][PACKED_MEMBERS[kind]])):
                claim = None
                yield line["seq0"] + k, system, tools, messages
            continue
        if kind in METERING_TYPES:
            shadowed = line["data"]["shadowedRange"]
            claim = (shadowed["start"], shadowed["end"], line["data"]["shadowedTokenCount"])
        elif kind in SURFACE_TYPES and "surfaceOp" in line:
            content = message_content(kind, line["data"])
            # An assistant message without content derives no message (it hosts usage only).
            price = 0 if kind == "assistant/message" and len(content) == 0 else content_tokens(content) + 4
            op = line["surfaceOp"]
            if op == "append":
                messages += price
            elif claim is not None:
                assert (claim[0], claim[1]) == (op["start"], op["end"]), f"seq {line['seq']}"
                messages += price - claim[2]
            claim = None
        else:
            if kind == "request/header":
                header = line["data"]["header"]
                system = quarter(header["system"]) + 4 if header.get("system") else 0
                tools = quarter(stringify(header["tools"])) + 4 if header.get("tools") else 0
            claim = None
        yield line["seq"], system, tools, messages


def log_lines(path: Path) -> list[dict[str, Any]]:
    """Every non-empty line of a plain dsh log, decoded."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- copies with lines removed -------------------------------------------------------------------

CHUNK_TYPES = {*PACKED_MEMBERS, "assistant/chunk"}


def line_seqs(line: dict[str, Any]) -> list[int]:
    """The seqs a stored line holds: one, or a packed row's members'."""
    if line["type"] in PACKED_MEMBERS:
        return [line["seq0"] + k for k in range(len(line["data"][PACKED_MEMBERS[line["type"]]]))]
    return [line["seq"]]


def without_chunks(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log as a snapshot that elides streaming chunks stores it: chunk events and rows gone."""
    return [lines[0], *(line for line in lines[1:] if line["type"] not in CHUNK_TYPES)]


def without_every_third_off_surface_line(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every third event line removed, where it neither sits on the surface nor meters a
    replacement: removing one of those would change what the log says, not only its numbering."""
    kept = [lines[0]]
    for index, line in enumerate(lines[1:]):
        structural = "surfaceOp" in line or line["type"] in METERING_TYPES
        if index % 3 != 1 or structural:
            kept.append(line)
    return kept


def missing_numbers(whole: list[dict[str, Any]], copy: list[dict[str, Any]]) -> int:
    """How many seqs of ``whole`` the copy lacks below its own last seq (numbers after the last
    event are not missing: the log just ends sooner)."""
    kept = {seq for line in copy[1:] for seq in line_seqs(line)}
    last = max(kept, default=-1)
    return sum(1 for line in whole[1:] for seq in line_seqs(line) if seq not in kept and seq < last)


def write_log(path: Path, lines: list[dict[str, Any]]) -> Path:
    """``lines`` written as a plain dsh log at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Escaped, so a lone surrogate a line holds is written as the harness wrote it.
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path
