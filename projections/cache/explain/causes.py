"""Why a request's prefix changed, and what to do about it (DESIGN §6.2).

The classifier looks at the two units at the first changed position (and, for insertions and
removals, at a few units after it) and returns the most specific cause that holds, each with a
remedy an engineer can act on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from projections.cache.explain.content_forms import string_block_switch
from projections.cache.predict.compaction import (
    head_change_detail,
    head_hashes,
    is_compaction_call,
    is_compaction_restart,
)
from projections.cache.render import attribution_block as attribution
from projections.cache.render.diff import ChangedUnit
from projections.cache.render.rendered_request import RenderedRequest, Tier
from projections.cache.render.spans import Span, smallest_span
from projections.normalized import JSON

CauseLabel = Literal[
    "model-changed",
    "params-changed",
    "tools-changed",
    "system-changed",
    "image-stripped",
    "tool-result-replaced",
    "truncated",
    "thinking-stripped",
    "reserialized",
    "edited",
    "inserted",
    "removed",
    "reordered",
    "injected",
    "attribution-changed",
    "compaction",
    "compacted",
    "unknown",
]

ALIGN_WINDOW = 64
"""How far ahead an insertion or removal is looked for: enough for a burst of injected messages."""

_ELLIPSES = ("…", "...", "[truncated]", "[...]", "(truncated)")
_TRUNCATION_NOTE = re.compile(
    r"\s*\[?\.{0,3}\s*\(?\d*\s*(chars?|characters|bytes|lines|tokens)?\s*truncated\)?\]?\s*$"
)
_DIGITS = re.compile(r"\d+")
_WS = re.compile(r"\s+")

REMEDIES: dict[str, str] = {
    "model-changed": (
        "Each model keeps its own cache; keep one model per lineage, or send side calls to another "
        "model from a separate lineage so the main chain's prefix stays warm."
    ),
    "params-changed": (
        "tool_choice, thinking, effort and image presence are part of the cache key; fix them for the "
        "whole session instead of toggling them per turn."
    ),
    "tools-changed": (
        "Send the same tool list in the same order on every request; register tools once per session "
        "and disable one by instructions rather than by removing its definition."
    ),
    "system-changed": (
        "Keep the system prompt byte-stable; move anything that changes during the session into a "
        "user message after the history."
    ),
    "timestamp-drift": (
        "Text that changes every turn sits inside the system prompt: send it as a user message after "
        "the history, so the system prompt and the tools stay byte-stable."
    ),
    "image-stripped": (
        "Images stripped by count shift the cut every turn: strip them in batches at a boundary that "
        "sits behind a cache marker, so the prefix before it survives until the next batch."
    ),
    "tool-result-replaced": (
        "Keep-last-N clearing rewrites an old result every turn: clear results in batches (e.g. every "
        "10 results) and only behind the last marker, so each clear costs one cache write, not one per turn."
    ),
    "truncated": (
        "A block was cut shorter than before: apply the same per-message cap when a message is first "
        "sent, never lower it afterwards."
    ),
    "thinking-stripped": (
        "Thinking blocks vanished from earlier turns: pass previous thinking blocks back unchanged "
        "(with their signatures) or strip them before they are first cached."
    ),
    "reserialized": (
        "The same content was serialized differently (key order, whitespace, role framing): render "
        "every message once and store the bytes sent, instead of re-rendering."
    ),
    "string-vs-block": (
        "Send each message in one form on every request (a one-text-block list, the only form a marker "
        "can sit on); this switch may break the cache, and a provider read past it shows it did not."
    ),
    "edited": (
        "A message already sent was edited in place: append corrections as new messages instead of "
        "rewriting history."
    ),
    "inserted": ("A message was inserted inside the history: append it after the last message instead."),
    "removed": (
        "A message was removed from inside the history: leave history intact, or remove in batches "
        "behind a marker and accept one cache write per batch."
    ),
    "reordered": (
        "Messages changed order (e.g. a late tool result moved above a stub): keep the order they were "
        "first sent in and append late results at the end."
    ),
    "injected": (
        "A system or reminder message is injected inside the history: append injections after the last "
        "message, never between cached turns."
    ),
    "attribution-changed": attribution.REMEDY,
    "compaction": (
        "Send the compaction call with the main thread's system prompt and tools and the summary "
        "request as its last user message, so it reads the main thread's cached history instead of "
        "writing it again (as Claude Code 2.1.39's compaction subagent does)."
    ),
    "compacted": (
        "Nothing to fix here: a compaction replaces the history by its summary, so only the tools and "
        "system prompt are read and the summary is written once; compacting less often pays that less often."
    ),
    "unknown": "Compare the two units side by side; the change matches no known pattern.",
}


@dataclass(frozen=True, slots=True)
class Cause:
    """A classified change with its remedy and, for text edits, the differing span."""

    label: CauseLabel
    detail: str
    remedy: str
    sublabel: str | None = None
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class FirstChange:
    """Where a request first differs from the one it is compared with, and why."""

    position: int
    tier: Tier
    identity: str
    byte_offset: int | None
    cause: Cause


def unit_text(raw: JSON) -> str:
    """The text a unit carries, for comparison: block text, tool result content, tool input."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return "\n".join(unit_text(part) for part in raw)
    if not isinstance(raw, dict):
        return "" if raw is None else json.dumps(raw, sort_keys=True)
    for key in ("text", "thinking", "output", "arguments"):
        value = raw.get(key)
        if isinstance(value, str):
            return value
    if "content" in raw:
        return unit_text(raw["content"])
    if "input" in raw:
        return json.dumps(raw["input"], sort_keys=True, ensure_ascii=False)
    function = raw.get("function")
    if isinstance(function, dict):
        return unit_text(function)
    return json.dumps({k: v for k, v in raw.items() if k != "cache_control"}, sort_keys=True)


def classify_change(prev: RenderedRequest, cur: RenderedRequest, change: ChangedUnit) -> Cause:
    """The most specific cause of the first change between two requests of one lineage."""
    if prev.model != cur.model:
        return _cause("model-changed", f"{prev.model} → {cur.model}")
    if prev.params != cur.params:
        keys = sorted(set(prev.params) | set(cur.params))
        changed = [k for k in keys if prev.params.get(k) != cur.params.get(k)]
        if changed == ["images"] and prev.params.get("images") and not cur.params.get("images"):
            # Images present/absent keys the messages cache: stripping the last one re-keys it whole.
            return _cause(
                "image-stripped", "the last image left the prompt, which re-keys every message from the first"
            )
        return _cause("params-changed", "changed: " + ", ".join(changed))
    p = change.position
    old_tier = prev.tiers[p] if p < len(prev) else None
    new_tier = cur.tiers[p] if p < len(cur) else None
    if is_compaction_call(cur) and head_hashes(prev) != head_hashes(cur):
        return _cause("compaction", head_change_detail(prev, cur))
    if "tools" in (old_tier, new_tier):
        return _cause("tools-changed", _tools_detail(prev, cur))
    switched = string_block_switch(prev, cur, p)
    if switched is not None:
        return _cause("reserialized", switched, sublabel="string-vs-block")
    if "system" in (old_tier, new_tier):
        found = _attribution_cause(prev, cur, p)
        if found is not None:
            return found
        if not _shifted(prev, cur, p):
            return _system_cause(prev, cur, p)
    if new_tier == "messages" and is_compaction_restart(cur) and not is_compaction_restart(prev):
        return _cause(
            "compacted",
            f"the history ({prev.message_indexes[-1] or 0} messages before) was replaced by the "
            "compaction summary",
        )
    if p >= len(cur) or p >= len(prev):
        return _cause("removed" if p >= len(cur) else "inserted", "at the end of the previous request")
    old, new = prev.raws[p], cur.raws[p]
    old_kind, new_kind = prev.kinds[p], cur.kinds[p]
    stripped = _images_stripped(old, new, old_kind, new_kind)
    if stripped:
        return _cause("image-stripped", stripped)
    old_text, new_text = unit_text(old), unit_text(new)
    if old_kind == new_kind == "tool_result" and _call_id(old) == _call_id(new):
        if _is_truncation(old_text, new_text):
            return _cause(
                "truncated", f"tool result {_call_id(new)} cut from {len(old_text)} to {len(new_text)} chars"
            )
        return _cause(
            "tool-result-replaced",
            f"tool result {_call_id(new)} now {_preview(new_text)}",
            span=smallest_span(old_text, new_text),
        )
    if old_kind == new_kind and _is_truncation(old_text, new_text):
        return _cause("truncated", f"{cur.identity(p)} cut from {len(old_text)} to {len(new_text)} chars")
    if old_kind == "thinking" and new_kind != "thinking":
        return _cause("thinking-stripped", f"thinking block at {prev.identity(p)} is gone")
    if _normalized(old) == _normalized(new):
        framing = ""
        if prev.roles[p] != cur.roles[p]:
            framing = f" (role {prev.roles[p]} → {cur.roles[p]})"
        return _cause("reserialized", f"{cur.identity(p)} has the same content in another form{framing}")
    shift = _shift(prev, cur, p)
    if shift is not None:
        return shift
    if old_kind == new_kind and prev.roles[p] == cur.roles[p] and _call_id(old) == _call_id(new):
        span = smallest_span(old_text, new_text)
        return _cause(
            "edited",
            f"{cur.identity(p)}: {_preview(old_text[span.start : span.old_end])!r} → "
            f"{_preview(new_text[span.start : span.new_end])!r}",
            span=span,
        )
    return _cause("unknown", f"{prev.kinds[p]} at {prev.identity(p)} became {cur.kinds[p]}")


def _cause(label: CauseLabel, detail: str, *, sublabel: str | None = None, span: Span | None = None) -> Cause:
    return Cause(label, detail, REMEDIES[sublabel or label], sublabel, span)


def _tools_detail(prev: RenderedRequest, cur: RenderedRequest) -> str:
    old = [(prev.identity(i), prev.block_hashes[i]) for i in range(prev.tier_start("system"))]
    new = [(cur.identity(i), cur.block_hashes[i]) for i in range(cur.tier_start("system"))]
    old_names, new_names = [n for n, _ in old], [n for n, _ in new]
    added = [n for n in new_names if n not in old_names]
    removed = [n for n in old_names if n not in new_names]
    parts = []
    if added:
        parts.append("added " + ", ".join(_short(n) for n in added))
    if removed:
        parts.append("removed " + ", ".join(_short(n) for n in removed))
    if not added and not removed and old_names != new_names:
        parts.append("reordered")
    edited = [n for n, h in new if n in dict(old) and dict(old)[n] != h]
    if edited:
        parts.append("edited " + ", ".join(_short(n) for n in edited))
    return "; ".join(parts) or "tool definitions differ"


def _attribution_cause(prev: RenderedRequest, cur: RenderedRequest, p: int) -> Cause | None:
    """Claude Code's attribution block at the first change: changed, added or gone."""
    what = attribution.block_change(prev, cur, p)
    return None if what is None else _cause("attribution-changed", f"Claude Code's attribution block: {what}")


def _short(identity: str) -> str:
    return identity.removeprefix("tools:")


def _system_cause(prev: RenderedRequest, cur: RenderedRequest, p: int) -> Cause:
    old = unit_text(prev.raws[p]) if p < len(prev) and prev.tiers[p] == "system" else ""
    new = unit_text(cur.raws[p]) if p < len(cur) and cur.tiers[p] == "system" else ""
    span = smallest_span(old, new)
    detail = f"{_preview(old[span.start : span.old_end])!r} → {_preview(new[span.start : span.new_end])!r}"
    if old and new and old != new and _DIGITS.sub("0", old) == _DIGITS.sub("0", new):
        return _cause(
            "system-changed", "only digits differ: " + detail, sublabel="timestamp-drift", span=span
        )
    return _cause("system-changed", detail, span=span)


def _images_stripped(old: JSON, new: JSON, old_kind: str, new_kind: str) -> str:
    if old_kind == "image" and new_kind != "image":
        return f"an image became {new_kind} {_preview(unit_text(new))!r}"
    if old_kind == new_kind == "tool_result":
        before, after = _image_count(old), _image_count(new)
        if after < before:
            return f"tool result {_call_id(new)} lost {before - after} of {before} images"
    return ""


def _image_count(raw: JSON) -> int:
    if isinstance(raw, dict):
        if raw.get("type") in ("image", "input_image", "image_url"):
            return 1
        return _image_count(raw.get("content"))
    if isinstance(raw, list):
        return sum(_image_count(part) for part in raw)
    return 0


def _call_id(raw: JSON) -> str | None:
    if isinstance(raw, dict):
        for key in ("tool_use_id", "tool_call_id", "call_id", "id"):
            value = raw.get(key)
            if isinstance(value, str):
                return value
    return None


def _is_truncation(old: str, new: str) -> bool:
    if len(new) >= len(old) or not new:
        return False
    if old.startswith(new):
        return True
    body = new.rstrip()
    while True:
        # Truncation notes stack ("… [truncated]", "...(1200 chars truncated)"): peel them all.
        before = body
        for ellipsis in _ELLIPSES:
            if body.endswith(ellipsis):
                body = body[: -len(ellipsis)].rstrip()
        body = _TRUNCATION_NOTE.sub("", body).rstrip()
        if body == before:
            break
    return bool(body) and old.startswith(body)


def _normalized(raw: JSON) -> JSON:
    if isinstance(raw, str):
        return _normalized({"type": "text", "text": raw})
    if isinstance(raw, list):
        if len(raw) == 1:
            return _normalized(raw[0])
        return [_normalized(part) for part in raw]
    if isinstance(raw, dict):
        out: dict[str, JSON] = {}
        for key, value in raw.items():
            if key == "cache_control":
                continue
            if key == "arguments" and isinstance(value, str):
                try:
                    out[key] = json.loads(value)
                    continue
                except ValueError:
                    pass
            out[key] = _normalized(value) if isinstance(value, (dict, list)) else value
            if isinstance(value, str):
                out[key] = _WS.sub(" ", value).strip()
        return out
    return raw


def _shifted(prev: RenderedRequest, cur: RenderedRequest, p: int) -> bool:
    return (
        _alignment(prev.block_hashes, cur.block_hashes, p) is not None
        or _alignment(cur.block_hashes, prev.block_hashes, p) is not None
    )


def _alignment(shorter: list[str], longer: list[str], p: int) -> int | None:
    """How many units were inserted into ``longer`` at ``p`` for the two to line up again."""
    if p >= len(shorter):
        return None
    anchor = shorter[p]
    for j in range(1, ALIGN_WINDOW + 1):
        q = p + j
        if q >= len(longer):
            return None
        if longer[q] == anchor:
            width = min(8, len(shorter) - p, len(longer) - q)
            if shorter[p : p + width] == longer[q : q + width]:
                return j
    return None


def _shift(prev: RenderedRequest, cur: RenderedRequest, p: int) -> Cause | None:
    window = min(ALIGN_WINDOW, len(prev) - p, len(cur) - p)
    old = prev.block_hashes[p : p + window]
    new = cur.block_hashes[p : p + window]
    for width in range(2, window + 1):
        if sorted(old[:width]) == sorted(new[:width]) and old[:width] != new[:width]:
            return _cause("reordered", f"{width} units from {cur.identity(p)} changed order")
    inserted = _alignment(prev.block_hashes, cur.block_hashes, p)
    if inserted is not None:
        roles = {cur.roles[i] for i in range(p, p + inserted)}
        texts = " ".join(unit_text(cur.raws[i]) for i in range(p, p + inserted))
        what = f"{inserted} unit(s) at {cur.identity(p)}"
        if roles & {"system", "developer"} or "<system-reminder>" in texts:
            return _cause("injected", f"{what}: {_preview(texts)!r}")
        return _cause("inserted", what)
    removed = _alignment(cur.block_hashes, prev.block_hashes, p)
    if removed is not None:
        return _cause("removed", f"{removed} unit(s) from {prev.identity(p)}")
    return None


def _preview(text: str, limit: int = 60) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
