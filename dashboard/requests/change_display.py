"""The request page's side-by-side view of a change: each side's unit as text, the change marked.

The marked text is assembled with :func:`format_html`, so prompt content stays escaped on the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from dashboard.models import Block, Request
from projections.cache.render.spans import smallest_span
from projections.normalized import JSON

CONTEXT_CHARS = 300
"""Characters of unchanged text shown on each side of a change; the rest is folded."""
CHANGED_CHARS = 600
"""A changed span longer than this shows its two ends around a fold."""


@dataclass(frozen=True)
class UnitSide:
    """One side of the side-by-side view: where the unit sits and its text with the change marked."""

    request: Request | None
    kind: str
    chars: int
    html: SafeString | None


def change_sides(
    previous: Request | None, call: Request, change: dict[str, Any]
) -> tuple[UnitSide, UnitSide]:
    """The unit that changed in the previous request and in this one, the change marked in each."""
    position = _content_change(previous, call, int(change["position"]))
    old_hash = _unit_hash(previous, position)
    new_hash = _unit_hash(call, position)
    blocks = Block.objects.in_bulk([h for h in (old_hash, new_hash) if h])
    old_block = blocks.get(old_hash) if old_hash else None
    new_block = blocks.get(new_hash) if new_hash else None
    old_text = display_text(json.loads(old_block.canonical)) if old_block else None
    new_text = display_text(json.loads(new_block.canonical)) if new_block else None
    span = smallest_span(old_text or "", new_text or "")
    return (
        _side(previous, old_block, old_text, span.start, span.old_end),
        _side(call, new_block, new_text, span.start, span.new_end),
    )


def _content_change(previous: Request | None, call: Request, position: int) -> int:
    """Where the content first differs, at or after the first change of the prefix.

    A re-keying parameter (images present, tool_choice, thinking) changes the prefix at the start
    of its tier while the unit there is byte-identical; the side-by-side view shows the first unit
    whose bytes did change (the stripped image, say) instead of two equal texts.
    """
    if previous is None:
        return position
    for index in range(position, min(len(previous.units), len(call.units))):
        if previous.units[index][0] != call.units[index][0]:
            return index
    return position


def _unit_hash(call: Request | None, position: int) -> str | None:
    if call is None or position >= len(call.units):
        return None
    return str(call.units[position][0])


def _side(call: Request | None, block: Block | None, text: str | None, start: int, end: int) -> UnitSide:
    return UnitSide(call, block.kind if block else "", len(text or ""), _marked(text, start, end))


def _marked(text: str | None, start: int, end: int) -> SafeString | None:
    """The text with ``text[start:end]`` in ``<mark class="change">``, folded around it; all escaped."""
    if text is None:
        return None
    before = text[max(0, start - CONTEXT_CHARS) : start]
    if start > CONTEXT_CHARS:
        before = f"… ({start - CONTEXT_CHARS:,} characters) …" + before
    changed = text[start:end]
    if len(changed) > CHANGED_CHARS:
        half = CHANGED_CHARS // 2
        changed = f"{changed[:half]} … ({len(changed) - 2 * half:,} characters) … {changed[-half:]}"
    after = text[end : end + CONTEXT_CHARS]
    if len(text) - end > CONTEXT_CHARS:
        after += f"… ({len(text) - end - CONTEXT_CHARS:,} characters) …"
    return format_html('{}<mark class="change">{}</mark>{}', before, changed, after)


def display_text(raw: JSON) -> str:
    """A unit as an engineer reads it: its text, a tool call's name and input, images as size placeholders."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return "\n".join(display_text(part) for part in raw)
    if not isinstance(raw, dict):
        return json.dumps(raw)
    kind = raw.get("type")
    if kind in ("image", "input_image", "image_url", "document"):
        return _placeholder(raw)
    for key in ("text", "thinking"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    if kind == "tool_use":
        return f"{raw.get('name')}({json.dumps(raw.get('input'), ensure_ascii=False, sort_keys=True)})"
    if "content" in raw and kind in ("tool_result", "function_call_output", None):
        return display_text(raw["content"])
    return json.dumps(_shrunk(raw), ensure_ascii=False, sort_keys=True, indent=1)


def _placeholder(raw: dict[str, Any]) -> str:
    nested = raw.get("source")
    source: dict[str, Any] = nested if isinstance(nested, dict) else raw
    data = source.get("data") or source.get("image_url") or source.get("url") or ""
    media = source.get("media_type") or raw.get("type")
    size = f"{len(data) * 3 // 4:,} bytes" if isinstance(data, str) and len(data) > 200 else str(data)
    return f"[{media}: {size}]"


def _shrunk(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _placeholder(value) if k == "data" and isinstance(v, str) and len(v) > 200 else _shrunk(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shrunk(v) for v in value]
    return value
