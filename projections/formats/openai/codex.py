"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``) in the dsh vocabulary.

Since September 2025 every line is an envelope ``{"timestamp", "type", "payload"}`` (``RolloutLine`` in
``codex-rs/protocol/src/protocol.rs``) whose type is ``session_meta`` (id, cwd, cli_version,
model_provider, source), ``turn_context`` (the model of the turns that follow), ``response_item`` (a
Responses API item: messages, reasoning, tool calls and their outputs), ``event_msg`` (UI events, of
which ``token_count`` carries usage and ``context_compacted`` marks a compaction) or ``compacted``
(the summary that replaced the history). Older rollouts have no envelope: a first line
``{"id", "timestamp", "instructions"}``, then bare response items and ``{"record_type":"state"}``
lines, with no timestamps, models or usage.

Like a Claude Code transcript, a rollout logs usage but no request bodies. One provider call is the
model's output items up to the ``token_count`` that closes it; it becomes one ``assistant/message``
followed by the tool results that arrived meanwhile, and one :class:`RequestRecord` keyed by the line
the call starts on, so a re-read finds the same keys. A call still open at the end of a log that
counts tokens is being written: it is left for the next read.

A fork or a spawned agent opens with its own ``session_meta`` and then a copy of its parent's history
(the parent's meta, messages and token counts, restamped at the moment of the fork). That history
stays on the surface, since the child sends it again, but its calls are the parent's and are not
counted a second time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from projections.formats.openai.codex_items import (
    message_blocks,
)
from projections.formats.openai.codex_rollout import ENVELOPE_TYPES, RolloutHead, RolloutReader
from projections.formats.openai.codex_state import STATE_VERSION, rollout_restore, rollout_state
from projections.formats.reading.lines import LogLines
from projections.formats.reading.resume import (
    CannotResume,
    ReadEnd,
    ResumePoint,
    resumable_items,
    time_from_json,
    time_to_json,
)
from projections.formats.reading.times import optional_time
from projections.normalized import (
    JSON,
    Lineage,
    SessionImport,
    SessionItem,
)

FORMAT = "codex"
_HEAD_SCAN_LINES = 50
_CWD_OPEN, _CWD_CLOSE = "<cwd>", "</cwd>"


def is_codex_record(value: Mapping[str, JSON]) -> bool:
    """Whether a first record is a Codex rollout line, enveloped or of the older bare layout."""
    if value.get("type") in ENVELOPE_TYPES and isinstance(value.get("payload"), dict):
        return True
    if value.get("record_type") == "state":
        return True
    # The older layout opens with the session's own record: an id, a timestamp and the instructions.
    return "type" not in value and "id" in value and "timestamp" in value and "instructions" in value


def _read_meta(head: RolloutHead, meta: Mapping[str, JSON], line_time: JSON) -> None:
    head.session_id = str(meta.get("id") or meta.get("session_id") or "")
    head.cwd = str(meta.get("cwd") or "")
    head.started_at = optional_time(meta.get("timestamp")) or optional_time(line_time)
    head.cli_version = str(meta.get("cli_version") or "")
    head.provider = str(meta.get("model_provider") or "")
    source = meta.get("source")
    if isinstance(source, dict) and "subagent" in source:
        # A review, compaction or spawned agent run by a parent thread; only spawns name the parent.
        head.subagent = True
        spawn = source["subagent"].get("thread_spawn") if isinstance(source["subagent"], dict) else None
        if isinstance(spawn, dict) and spawn.get("parent_thread_id"):
            head.parent_id = str(spawn["parent_thread_id"])
    if head.parent_id is None and meta.get("forked_from_id"):
        head.parent_id = str(meta["forked_from_id"])


def _context_cwd(item: Mapping[str, JSON]) -> str:
    """The ``<cwd>`` an injected ``<environment_context>`` message names, or ``""``."""
    for block in message_blocks(item):
        text = str(block.get("text", "")) if isinstance(block, dict) else ""
        start, end = text.find(_CWD_OPEN), text.find(_CWD_CLOSE)
        if text.lstrip().startswith("<environment_context>") and 0 <= start < end:
            return text[start + len(_CWD_OPEN) : end].strip()
    return ""


def _scan_head(path: Path) -> RolloutHead:
    """Session facts from the ``session_meta`` line (or the older layout's first record).

    The older layout records no cwd; its first injected environment context names it.
    """
    head = RolloutHead()
    bare = False
    with LogLines(path) as log:
        for count, line in enumerate(log.json_lines()):
            if count >= _HEAD_SCAN_LINES:
                break
            value = line.value
            if value is None:
                continue
            payload = value.get("payload")
            if value.get("type") == "session_meta" and isinstance(payload, dict):
                _read_meta(head, payload, value.get("timestamp"))
                break
            if "type" not in value and "id" in value and "instructions" in value:
                _read_meta(head, value, None)
                bare = True
            elif bare and value.get("type") == "message" and not head.cwd:
                head.cwd = _context_cwd(value)
            if bare and head.cwd:
                break
    return head


def _stem_id(path: Path) -> str:
    """The session id a rollout's name ends with (``rollout-2025-09-02T17-17-41-<uuid>.jsonl``)."""
    stem = path.name.split(".")[0].removeprefix("rollout-")
    parts = stem.split("-")
    return "-".join(parts[-5:]) if len(parts) >= 5 else stem


def read_codex(
    path: Path, *, resume: ResumePoint | None = None, end: ReadEnd | None = None
) -> Iterator[SessionImport]:
    """The session of one rollout file.

    ``resume``: a point an earlier read of this file left in ``end``; the lines after it are read
    and what they add is emitted. Raises :class:`CannotResume` before emitting anything when the
    point is of another state version.
    """
    if resume is not None:
        if resume.state.get("version") != STATE_VERSION:
            raise CannotResume(f"{path}: the stored reading state is of another version")
        head = RolloutHead(**resume.state["head"])
        head.started_at = time_from_json(resume.state["head"]["started_at"])
    else:
        head = _scan_head(path)
    lineage: Lineage = "subagent" if head.subagent else "main"
    session = SessionImport(
        external_id=head.session_id or _stem_id(path),
        format=FORMAT,
        path=str(path),
        items=iter(()),
        format_version=head.cli_version[:20],
        cwd=head.cwd,
        started_at=head.started_at,
        parent_external_id=head.parent_id,
        lineage=lineage,
    )
    # Until its meta line is in, a rollout's id is its file name's: it is read whole until then.
    session.items = _items(path, session, head, resume, end if head.session_id else None)
    yield session


def _items(
    path: Path, session: SessionImport, head: RolloutHead, start: ResumePoint | None, end: ReadEnd | None
) -> Iterator[SessionItem]:
    rollout = RolloutReader(str(path), session, head)
    if start is not None:
        rollout_restore(rollout, start.state["rollout"])
    state = partial(_state, rollout, head) if end is not None else None
    stop = yield from resumable_items(path, session, start, rollout.feed, state)
    yield from rollout.finish()
    if end is not None:
        end.point = stop


def _state(rollout: RolloutReader, head: RolloutHead) -> dict[str, JSON]:
    """The state a later read takes up in: the rollout's head and the reader's."""
    facts = {name: getattr(head, name) for name in RolloutHead.__dataclass_fields__}
    facts["started_at"] = time_to_json(head.started_at)
    return {"version": STATE_VERSION, "head": facts, "rollout": rollout_state(rollout)}
