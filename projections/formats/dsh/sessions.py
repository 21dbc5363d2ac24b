"""dsh session logs: ``session.jsonl`` and multi-frame ``session.jsonl.zstd`` (DESIGN §4).

A header line, then one event per line. Versions 0, 3 and 4 are read; any other is refused.
Packed chunk rows expand into ``assistant/chunk`` events; seqs must strictly increase, and a gap
between them is kept and reported once (see :class:`~projections.formats.dsh.seqs.SeqOrder`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from projections.formats.dsh.calls import DshCalls
from projections.formats.dsh.event_order import STATE_VERSION, EventOrder
from projections.formats.dsh.seqs import SeqOrder
from projections.formats.reading.limits import MAX_EVENT_TYPE, MAX_SEQ, MAX_SOURCE_SEQS
from projections.formats.reading.lines import LogLines, is_zstd_path
from projections.formats.reading.resume import (
    CannotResume,
    ReadEnd,
    ResumePoint,
)
from projections.formats.reading.times import parse_time
from projections.formats.reading.titles import blocks_text, first_title, one_line, prompt_title
from projections.normalized import JSON, EventRecord, FormatError, LineError, SessionImport, SessionItem
from projections.wall_clock import is_wall_clock

FORMAT = "dsh"
SUPPORTED_VERSIONS = (0, 3, 4)
PACKED_ROW_CHUNKS = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
"""Packed storage rows (the harness's ``chunk-rows``) by the ``assistant/chunk`` delta of their members."""
_TEXT_ROW_KEYS = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_CALL_ROW_KEYS = frozenset({"turn", "step", "index", "id", "dt", "args"})
_MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's largest exact integer: the harness refuses a packed row whose seqs or times leave it."""


class _BadField(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True, slots=True)
class DshHeader:
    """The facts of a dsh header line."""

    id: str
    version: int
    created_at: datetime | None
    """``None`` where the header gives a test clock's time in place of the wall clock's."""
    cwd: str
    parent_session: str | None
    title: str
    delegation_depth: int


def parse_header(value: dict[str, JSON], path: str, line: int) -> DshHeader:
    """Validate a header object; raises :class:`FormatError` naming the field."""
    if value.get("type") != "session":
        raise FormatError(path, line, "type", f"missing header: first line has type {value.get('type')!r}")
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version not in SUPPORTED_VERSIONS:
        known = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise FormatError(path, line, "version", f"unsupported header version {version!r} (known: {known})")
    session_id = value.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise FormatError(path, line, "id", "the header has no session id")
    try:
        created_at = _creation_time(value.get("createdAt"))
    except ValueError as error:
        raise FormatError(path, line, "createdAt", str(error)) from None
    depth = value.get("delegationDepth", 0)
    parent = value.get("parentSession")
    cwd = value.get("cwd")
    title = value.get("title")
    return DshHeader(
        id=session_id,
        version=version,
        created_at=created_at,
        cwd=cwd if isinstance(cwd, str) else "",
        parent_session=parent if isinstance(parent, str) and parent else None,
        title=title if isinstance(title, str) else "",
        delegation_depth=depth if isinstance(depth, int) and not isinstance(depth, bool) else 0,
    )


def _creation_time(value: JSON) -> datetime | None:
    """The header's ``createdAt``; ``None`` for a test clock's (the snapshots write 0), which leaves
    the session's start to its events (see :data:`~projections.formats.reading.times.WALL_CLOCK_FROM`)."""
    moment = parse_time(value)
    return moment if is_wall_clock(moment) else None


def read_header(path: Path) -> DshHeader:
    """Read and validate the header of a dsh log (its first non-empty line)."""
    with LogLines(path) as log:
        for line in log.json_lines():
            if line.value is None:
                assert line.error is not None
                raise FormatError(str(path), line.number, "header", f"unreadable header: {line.error.reason}")
            return parse_header(line.value, str(path), line.number)
    raise FormatError(str(path), None, "header", "missing header: the log is empty")


def _session_name(path: Path) -> str:
    """A fallback external id for a refused log: its folder for ``<id>/session.jsonl``, else its stem."""
    return path.parent.name if path.name.startswith("session.jsonl") else path.name.split(".")[0]


def read_dsh_session(
    path: Path, *, resume: ResumePoint | None = None, end: ReadEnd | None = None
) -> SessionImport:
    """One dsh session from ``path``; a refused header gives a session with ``fatal`` set and no items.

    ``resume``: a point an earlier read of this plain log left in ``end``; the events after it are
    read (the header is read again: it is the first line). A zstd log is read whole: its offsets
    are of the decompressed stream. Raises :class:`CannotResume` when the point is of another state
    version.
    """
    if resume is not None and resume.state.get("version") != STATE_VERSION:
        raise CannotResume(f"{path}: the stored reading state is of another version")
    try:
        header = read_header(path)
    except FormatError as error:
        return SessionImport(
            external_id=_session_name(path), format=FORMAT, path=str(path), items=iter(()), fatal=str(error)
        )
    session = SessionImport(
        external_id=header.id,
        format=FORMAT,
        path=str(path),
        items=iter(()),
        format_version=str(header.version),
        title=header.title,
        cwd=header.cwd,
        started_at=header.created_at,
        parent_external_id=header.parent_session,
        lineage="subagent" if header.delegation_depth > 0 else "main",
    )
    if is_zstd_path(path):
        if resume is not None:
            raise CannotResume(f"{path}: a zstd log is read whole")
        end = None
    session.items = _session_items(path, session, resume, end)
    return session


def _session_items(
    path: Path, session: SessionImport, start: ResumePoint | None, end: ReadEnd | None
) -> Iterator[SessionItem]:
    name = str(path)
    reading = EventOrder(SeqOrder(name))
    calls = DshCalls(name, session.lineage)
    named = prompt = other = ""
    if start is not None:
        reading.restore(start.state, session, calls)
    stop: ResumePoint | None = None
    offset, lines_before = (start.offset, start.line) if start is not None else (0, 0)
    with LogLines(path, start=offset, lines_before=lines_before) as log:
        lines = log.json_lines()
        if start is None:
            next(lines, None)  # the header, validated by read_header
        for line in lines:
            if end is not None and not line.terminated:
                # A last line without its newline may be half written: take up before it next time.
                stop = ResumePoint(log.consumed, log.consumed_lines, reading.state(session, calls))
            if line.error is not None:
                yield line.error
            if line.notice is not None:
                yield line.notice
            if line.value is None:
                continue
            try:
                events = decode_record(line.value, line.number)
            except _BadField as bad:
                yield LineError(name, line.number, bad.field, bad.reason)
                continue
            for event in events:
                for item in reading.check(event, session, calls):
                    if item is event:
                        if event.type == "session/title":
                            named = _event_title(event) or named
                        elif event.type == "user/message" and not prompt:
                            prompt = _typed_prompt(event)
                            other = other or _message_title(event)
                    yield item
        session.crash_tail = log.crash_tail
        if end is not None and stop is None:
            stop = ResumePoint(log.consumed, log.consumed_lines, reading.state(session, calls))
    gaps = reading.seqs.gaps_notice()
    if gaps is not None:
        yield gaps
    if end is not None:
        end.point = stop
    # The harness names a session with session/title events (the newest wins; its own fallback is
    # the first prompt); a header's title, then the first prompt, for a log without one, and last
    # the first message of any other kind (a goal's round states its objective). Read from where an
    # earlier read stopped, only a session/title event names it: the first prompt here is not the
    # session's first.
    session.title = first_title([named, session.title, prompt, other] if start is None else [named])


def _event_title(event: EventRecord) -> str:
    title = event.data.get("title")
    return one_line(title) if isinstance(title, str) else ""


def _typed_prompt(event: EventRecord) -> str:
    """The title a ``user/message`` gives, if the user typed it (not a compaction checkpoint)."""
    source = event.data.get("source")
    if isinstance(source, dict) and source.get("kind") not in (None, "user"):
        return ""
    return _message_title(event)


def _message_title(event: EventRecord) -> str:
    return prompt_title(blocks_text(event.data.get("content")))


def _int(value: JSON, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _BadField(field, f"expected a non-negative integer, got {value!r}")
    return int(value)


def _time(value: JSON, field: str) -> datetime:
    try:
        return parse_time(value)
    except ValueError as error:
        raise _BadField(field, str(error)) from None


def _surface_op(value: JSON) -> JSON:
    if value is None or value == "append":
        return value
    if isinstance(value, dict) and value.get("op") == "replace":
        for start, end in (("start", "end"), ("startSeq", "endSeq")):
            if start in value or end in value:
                _int(value.get(start), f"surfaceOp.{start}")
                _int(value.get(end), f"surfaceOp.{end}")
                return value
    raise _BadField("surfaceOp", f"expected 'append' or a replace with start/end, got {value!r}")


def _seq(value: JSON) -> int:
    seq = _int(value, "seq")
    if seq > MAX_SEQ:
        raise _BadField("seq", f"{seq} exceeds the limit of {MAX_SEQ}, the largest seq stored")
    return seq


def _source_seqs(value: JSON, seq: int) -> tuple[int, ...] | None:
    """``sourceEventSeqs``: seqs, where a ``[first, last]`` pair stands for an inclusive run.

    The sources are earlier nodes of the log (or positions on its surface), so each lies below the
    event's own ``seq``; a run is checked against that bound, and against :data:`MAX_SOURCE_SEQS`,
    before it is expanded, so a short line cannot expand to millions of seqs.
    """
    if value is None:
        return None
    if not isinstance(value, list):
        raise _BadField("sourceEventSeqs", f"expected a list, got {type(value).__name__}")
    seqs: list[int] = []
    for entry in value:
        if isinstance(entry, list) and len(entry) == 2:
            first = _int(entry[0], "sourceEventSeqs")
            last = _int(entry[1], "sourceEventSeqs")
            if last < first:
                raise _BadField("sourceEventSeqs", f"range {entry!r} runs backwards")
        else:
            first = last = _int(entry, "sourceEventSeqs")
        if last >= seq:
            raise _BadField(
                "sourceEventSeqs", f"{entry!r} cites seq {last}, not before this event's seq {seq}"
            )
        if len(seqs) + last - first + 1 > MAX_SOURCE_SEQS:
            raise _BadField("sourceEventSeqs", f"cites more than the limit of {MAX_SOURCE_SEQS} seqs")
        seqs.extend(range(first, last + 1))
    return tuple(seqs)


def decode_record(value: dict[str, JSON], line: int) -> list[EventRecord]:
    """The events of one stored row: one event, or the members of a packed chunk row."""
    kind = value.get("type")
    if not isinstance(kind, str) or not kind:
        raise _BadField("type", f"expected a non-empty string, got {kind!r}")
    if len(kind) > MAX_EVENT_TYPE:
        raise _BadField(
            "type", f"{len(kind)} characters exceed the limit of {MAX_EVENT_TYPE} for an event type"
        )
    if kind in PACKED_ROW_CHUNKS:
        return _expand_row(value, kind, line)
    data = value.get("data")
    if not isinstance(data, dict):
        raise _BadField("data", f"expected an object, got {type(data).__name__}")
    ignorable = value.get("ignorable", False)
    if not isinstance(ignorable, bool):
        raise _BadField("ignorable", f"expected a boolean, got {ignorable!r}")
    seq = _seq(value.get("seq"))
    return [
        EventRecord(
            seq=seq,
            type=kind,
            time=_time(value.get("time"), "time"),
            data=data,
            surface_op=_surface_op(value.get("surfaceOp")),
            source_event_seqs=_source_seqs(value.get("sourceEventSeqs"), seq),
            ignorable=ignorable,
            line=line,
        )
    ]


def _expand_row(value: dict[str, JSON], kind: str, line: int) -> list[EventRecord]:
    """The ``assistant/chunk`` events a packed row stores, exactly as the harness replays them.

    Member ``k`` is ``{type: "assistant/chunk", seq: seq0 + k, time: time0 + dt[0] + … + dt[k-1],
    data: {turn, step, chunk}}``: ``dt`` holds the gaps between consecutive members, one fewer than
    the members. A row of any other shape is refused, as the harness refuses it: expanding a guess
    would put a wrong run of events in the log.
    """
    if set(value) != {"type", "seq0", "time0", "data"}:
        raise _BadField(
            "type", f"a {kind} row must be exactly {{type, seq0, time0, data}}, got {sorted(value)}"
        )
    seq0 = _safe_integer(value.get("seq0"), "seq0")
    if seq0 < 0:
        raise _BadField("seq0", f"expected a non-negative integer, got {seq0}")
    time0 = _safe_integer(value.get("time0"), "time0")
    data = value.get("data")
    if not isinstance(data, dict):
        raise _BadField("data", f"expected an object, got {type(data).__name__}")
    members = _row_members(data, kind)
    gaps = data["dt"]
    if not isinstance(gaps, list):
        raise _BadField("data.dt", f"expected a list of integer milliseconds, got {gaps!r}")
    gaps = [_safe_integer(gap, "data.dt") for gap in gaps]
    if len(gaps) != len(members) - 1:
        raise _BadField("data.dt", f"{len(gaps)} gaps for {len(members)} members (expected one fewer)")
    if seq0 + len(members) - 1 > MAX_SEQ:
        raise _BadField("seq0", f"member seqs exceed the limit of {MAX_SEQ}, the largest seq stored")
    chunk_type = PACKED_ROW_CHUNKS[kind]
    events = []
    moment = time0
    for k, member in enumerate(members):
        if k:
            moment += gaps[k - 1]
            if abs(moment) > _MAX_SAFE_INTEGER:
                raise _BadField("data.dt", "member times leave the safe-integer range")
        events.append(
            EventRecord(
                seq=seq0 + k,
                type="assistant/chunk",
                time=_time(moment, "time0"),
                data={
                    "turn": data["turn"],
                    "step": data["step"],
                    "chunk": _member_chunk(data, chunk_type, member),
                },
                line=line,
            )
        )
    return events


def _row_members(data: dict[str, JSON], kind: str) -> list[str]:
    """The members' texts or argument fragments, after checking the row's data has exactly its keys."""
    if kind == "tool-call-chunks":
        keys = set(data)
        if keys != _TOOL_CALL_ROW_KEYS and keys != _TOOL_CALL_ROW_KEYS | {"name"}:
            raise _BadField(
                "data", f"a {kind} row holds {{turn, step, index, id, name?, dt, args}}, got {sorted(keys)}"
            )
        if not isinstance(data["id"], str) or not isinstance(data.get("name", ""), str):
            raise _BadField("data.id", "id (and name when present) must be strings")
        payload = "args"
    else:
        if set(data) != _TEXT_ROW_KEYS:
            raise _BadField(
                "data", f"a {kind} row holds {{turn, step, index, dt, texts}}, got {sorted(data)}"
            )
        payload = "texts"
    for field in ("turn", "step", "index"):
        if isinstance(data[field], bool) or not isinstance(data[field], int | float):
            raise _BadField(f"data.{field}", f"expected a number, got {data[field]!r}")
    members = data[payload]
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise _BadField(f"data.{payload}", "expected a non-empty list of strings")
    return members


def _member_chunk(data: dict[str, JSON], chunk_type: str, member: str) -> dict[str, JSON]:
    """One member's ``chunk``, keys in the order the harness writes them."""
    if chunk_type != "tool-call-delta":
        return {"type": chunk_type, "index": data["index"], "text": member}
    chunk: dict[str, JSON] = {"type": chunk_type, "index": data["index"], "id": data["id"]}
    if "name" in data:
        chunk["name"] = data["name"]
    chunk["argumentsDelta"] = member
    return chunk


def _safe_integer(value: JSON, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > _MAX_SAFE_INTEGER:
        raise _BadField(field, f"expected an integer, got {value!r}")
    return int(value)
