"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) in the dsh vocabulary.

One API call spans several transcript lines (one per content block) sharing ``message.id`` and
``requestId``; newer versions interleave the call's tool results between those lines and write a
partial ``output_tokens`` on its first line. A call therefore becomes one ``assistant/message``
(content merged from its lines, usage from the line with the largest ``output_tokens``) followed by
its tool results, and one :class:`RequestRecord`. ``model: "<synthetic>"`` lines are written by the
client, not the model, and are not calls. Subagents live in ``<session>/subagents/agent-*.jsonl``
(or, in older layouts, ``agent-*.jsonl`` beside the sessions) or inline as ``isSidechain`` lines;
each becomes its own session linked to its parent. The compaction subagent (``agent-acompact-*``,
2.1.x) makes a compaction's summarising call: its calls get the lineage ``compaction``.

A transcript grows by lines appended at its end, so a read can stop after its last whole line and
the next read take up there with the transcript's state (:func:`read_claude_code` with ``resume``
and ``end``). Inline sidechains cannot: their lines are grouped by a root found across the whole
file, so a file that holds one is read whole each time it grows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from projections.formats.anthropic.claude_code_state import (
    STATE_VERSION,
    transcript_restore,
    transcript_state,
)
from projections.formats.anthropic.claude_code_transcript import Transcript
from projections.formats.anthropic.transcript_title import TranscriptTitle
from projections.formats.reading.lines import LogLines
from projections.formats.reading.resume import (
    CannotResume,
    ReadEnd,
    ResumePoint,
    resumable_items,
    time_from_json,
    time_to_json,
)
from projections.formats.reading.storable import TooDeep, decode_storable
from projections.formats.reading.times import optional_time, parse_time
from projections.normalized import (
    JSON,
    Lineage,
    LineError,
    SessionImport,
    SessionItem,
)

FORMAT = "claude-code"
TRANSCRIPT_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "progress", "queue-operation"}
)
"""Record kinds that identify a transcript; any other kind inside one is tolerated and skipped."""
_HEAD_SCAN_LINES = 200
_SIDECHAIN_MARKERS = (b'"isSidechain":true', b'"isSidechain": true')
COMPACTION_AGENT = "acompact"
"""How the id of Claude Code's compaction subagent starts (``agentId: "acompact-e1f845"``)."""


@dataclass(slots=True)
class _Head:
    session_id: str = ""
    agent_id: str = ""
    cwd: str = ""
    started_at: datetime | None = None
    sidechain: bool = False


def _scan_head(path: Path) -> _Head:
    """Session facts from the first message lines (snapshot lines carry none)."""
    head = _Head()
    with LogLines(path) as log:
        for count, line in enumerate(log.json_lines()):
            if count >= _HEAD_SCAN_LINES:
                break
            value = line.value
            if value is None or not isinstance(value.get("sessionId"), str):
                continue
            head.session_id = str(value["sessionId"])
            head.cwd = str(value.get("cwd") or "")
            head.agent_id = str(value.get("agentId") or "")
            head.sidechain = value.get("isSidechain") is True
            try:
                head.started_at = parse_time(value.get("timestamp"))
            except ValueError:
                head.started_at = None
            break
    return head


def read_claude_code(
    path: Path, *, resume: ResumePoint | None = None, end: ReadEnd | None = None
) -> Iterator[SessionImport]:
    """The sessions of one transcript file: the session itself, then each inline sidechain.

    ``resume``: a point an earlier read of this file left in ``end``; the lines after it are read
    and what they add is emitted. Raises :class:`CannotResume` before emitting anything when the
    point is of another state version or the new lines hold an inline sidechain.
    """
    if resume is not None:
        yield _resumed(path, resume, end)
        return
    head = _scan_head(path)
    if end is not None and not head.session_id:
        # No line names the session yet (a transcript whose first line is a file-history
        # snapshot): nothing is stored under a made-up id, and the next read takes the file whole.
        end.point = None
        return
    stem = path.name.removesuffix(".jsonl")
    if stem.startswith("agent-") or (head.sidechain and head.agent_id):
        external_id = stem if stem.startswith("agent-") else f"agent-{head.agent_id}"
        session = _session(path, head, external_id, head.session_id or None, "subagent")
        # The compaction subagent (agent-acompact-*) makes the summarising call of a compaction.
        compaction = head.agent_id.startswith(COMPACTION_AGENT) or stem.startswith(
            f"agent-{COMPACTION_AGENT}"
        )
        lineage: Lineage = "compaction" if compaction else "subagent"
        session.items = _items(path, session, lineage, None, end)
        yield session
        return
    # Read whole, a transcript no line names is the session of the file's name.
    main_id = head.session_id or stem
    session = _session(path, head, main_id, None, "main")
    session.items = _items(path, session, "main", None, end)
    yield session
    places = _sidechain_places(path)
    if places and end is not None:
        end.point = None
    for root, lines in places.items():
        side = _session(path, head, f"sidechain-{root}", main_id, "subagent")
        side.started_at = None
        side.items = _items_at(path, side, lines)
        yield side


def _resumed(path: Path, point: ResumePoint, end: ReadEnd | None) -> SessionImport:
    """The session of a transcript read from ``point`` on."""
    state = point.state
    if state.get("version") != STATE_VERSION:
        raise CannotResume(f"{path}: the stored reading state is of another version")
    if _sidechain_places(path, start=point.offset, lines_before=point.line):
        raise CannotResume(f"{path}: new lines hold an inline sidechain, read with the whole file")
    session = SessionImport(
        external_id=state["external_id"],
        format=FORMAT,
        path=str(path),
        items=iter(()),
        cwd=state["cwd"],
        started_at=time_from_json(state["started_at"]),
        parent_external_id=state["parent"],
        lineage=state["lineage"],
    )
    session.items = _items(path, session, session.lineage, point, end)
    return session


def _session(
    path: Path, head: _Head, external_id: str, parent: str | None, lineage: Lineage
) -> SessionImport:
    return SessionImport(
        external_id=external_id,
        format=FORMAT,
        path=str(path),
        items=iter(()),
        cwd=head.cwd,
        started_at=head.started_at,
        parent_external_id=parent,
        lineage=lineage,
    )


def _items(
    path: Path, session: SessionImport, lineage: Lineage, start: ResumePoint | None, end: ReadEnd | None
) -> Iterator[SessionItem]:
    """The items of a transcript's own session (its inline sidechain lines left out), from ``start``."""
    transcript = Transcript(str(path), lineage, session)
    title = TranscriptTitle()
    if start is not None:
        transcript_restore(transcript, start.state["transcript"])

    def own_line(value: dict[str, JSON], number: int) -> Iterator[SessionItem]:
        # A subagent's file (the compaction subagent's too) is all sidechain lines, and all its own.
        if lineage in ("subagent", "compaction") or value.get("isSidechain") is not True:
            title.feed(value)
            yield from transcript.feed(value, number)

    state = partial(_state, transcript, session) if end is not None else None
    stop = yield from resumable_items(path, session, start, own_line, state)
    # Read from where an earlier read stopped, the first prompt here is not the session's first: only
    # a name the user or the summariser gave counts.
    session.title = (title.title if start is None else title.named) or session.title
    yield from transcript.finish(growing=end is not None)
    if end is not None:
        end.point = stop


def _state(transcript: Transcript, session: SessionImport) -> dict[str, JSON]:
    """The state a later read takes up in: the session's facts and the transcript's."""
    return {
        "version": STATE_VERSION,
        "external_id": session.external_id,
        "cwd": session.cwd,
        "started_at": time_to_json(session.started_at),
        "parent": session.parent_external_id,
        "lineage": session.lineage,
        "transcript": transcript_state(transcript),
    }


def _sidechain_places(
    path: Path, *, start: int = 0, lines_before: int = 0
) -> dict[str, list[tuple[int, int]]]:
    """Byte offset and line number of every inline sidechain line (after ``start``), grouped by the
    sidechain's root uuid."""
    roots: dict[str, str] = {}
    places: dict[str, list[tuple[int, int]]] = {}
    with LogLines(path, start=start, lines_before=lines_before) as log:
        for raw in log.raw_lines():
            if raw.data is None or not any(marker in raw.data for marker in _SIDECHAIN_MARKERS):
                continue
            line = next(_decode([raw.data]), None)
            if line is None or line.get("isSidechain") is not True:
                continue
            uuid = str(line.get("uuid") or f"line-{raw.number}")
            parent = line.get("parentUuid")
            root = roots.get(parent, uuid) if isinstance(parent, str) else uuid
            roots[uuid] = root
            places.setdefault(root, []).append((raw.offset, raw.number))
    return places


def _decode(chunks: list[bytes]) -> Iterator[dict[str, JSON]]:
    for chunk in chunks:
        try:
            value = decode_storable(chunk).value
        except (UnicodeDecodeError, json.JSONDecodeError, TooDeep):
            continue
        if isinstance(value, dict):
            yield value


def _items_at(path: Path, session: SessionImport, places: list[tuple[int, int]]) -> Iterator[SessionItem]:
    transcript = Transcript(str(path), "subagent", session)
    title = TranscriptTitle()
    with LogLines(path) as log:
        for offset, number in places:
            raw = log.line_at(offset)
            value = next(_decode([raw.data]), None) if raw is not None and raw.data is not None else None
            if value is None:
                yield LineError(str(path), number, "json", "sidechain line could not be read again")
                continue
            if session.started_at is None:
                session.started_at = optional_time(value.get("timestamp"))
            title.feed(value)
            yield from transcript.feed(value, number)
    session.title = title.title or session.title
    yield from transcript.finish()
