"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) in the dsh vocabulary.

One API call spans several transcript lines (one per content block) sharing ``message.id`` and
``requestId``; newer versions interleave the call's tool results between those lines and write a
partial ``output_tokens`` on its first line. A call therefore becomes one ``assistant/message``
(content merged from its lines, usage from the line with the largest ``output_tokens``) followed by
its tool results, and one :class:`RequestRecord`. ``model: "<synthetic>"`` lines are written by the
client, not the model, and are not calls. Subagents live in ``<session>/subagents/agent-*.jsonl``
(or, in older layouts, ``agent-*.jsonl`` beside the sessions) or inline as ``isSidechain`` lines;
each becomes its own session linked to its parent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from projections.formats.anthropic.claude_code_transcript import Transcript
from projections.formats.anthropic.transcript_title import TranscriptTitle
from projections.formats.reading.lines import LogLines
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
_Keep = Callable[[dict[str, JSON]], bool]
_SIDECHAIN_MARKERS = (b'"isSidechain":true', b'"isSidechain": true')


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


def read_claude_code(path: Path) -> Iterator[SessionImport]:
    """The sessions of one transcript file: the session itself, then each inline sidechain."""
    head = _scan_head(path)
    stem = path.name.removesuffix(".jsonl")
    if stem.startswith("agent-") or (head.sidechain and head.agent_id):
        external_id = stem if stem.startswith("agent-") else f"agent-{head.agent_id}"
        session = _session(path, head, external_id, head.session_id or None, "subagent")
        session.items = _items(path, session, "subagent", lambda value: True)
        yield session
        return
    main_id = head.session_id or stem
    session = _session(path, head, main_id, None, "main")
    session.items = _items(path, session, "main", lambda value: value.get("isSidechain") is not True)
    yield session
    for root, places in _sidechain_places(path).items():
        side = _session(path, head, f"sidechain-{root}", main_id, "subagent")
        side.started_at = None
        side.items = _items_at(path, side, places)
        yield side


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


def _items(path: Path, session: SessionImport, lineage: Lineage, keep: _Keep) -> Iterator[SessionItem]:
    transcript = Transcript(str(path), lineage, session)
    title = TranscriptTitle()
    with LogLines(path) as log:
        for line in log.json_lines():
            if line.error is not None:
                yield line.error
            if line.notice is not None:
                yield line.notice
            if line.value is not None and keep(line.value):
                title.feed(line.value)
                yield from transcript.feed(line.value, line.number)
        session.crash_tail = log.crash_tail
    session.title = title.title or session.title
    yield from transcript.finish()


def _sidechain_places(path: Path) -> dict[str, list[tuple[int, int]]]:
    """Byte offset and line number of every inline sidechain line, grouped by the sidechain's root uuid."""
    roots: dict[str, str] = {}
    places: dict[str, list[tuple[int, int]]] = {}
    with LogLines(path) as log:
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
