"""Where a read of a growing log stopped, so that the next read takes up there (issue: ingest that
costs only what is new).

A reader that can resume hands back a :class:`ResumePoint` once its sessions are exhausted: the
byte offset just after the last line it read whole, that line's number, and the state it carries
from one line to the next (a call whose lines are not all in, the surface a compaction will
claim, the numbering of events and calls). Fed the lines after the offset from that state, the
reader emits exactly what a read of the whole file would emit after them; items it emitted at the
end of the previous read because the file ended there (a call still open) come again, and the
store counts them once. The state is plain JSON, so it is kept in the database beside the file's
size and hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from projections.formats.reading.lines import LogLines
from projections.normalized import JSON, SessionImport, SessionItem, Usage


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """A read of one file that stopped after ``line`` lines, at byte ``offset``, in ``state``."""

    offset: int
    line: int
    state: dict[str, JSON]


@dataclass(slots=True)
class ReadEnd:
    """Filled in by a reader when the sessions of its file are exhausted: ``point`` is where a later
    read can take up, or ``None`` when this reader (or this file) must be read whole again."""

    point: ResumePoint | None = None


class CannotResume(ValueError):
    """The file holds something its reader can only read from the start (named in the message)."""


def resumable_items(
    path: Path,
    session: SessionImport,
    start: ResumePoint | None,
    feed: Callable[[dict[str, JSON], int], Iterable[SessionItem]],
    state: Callable[[], dict[str, JSON]] | None,
) -> Generator[SessionItem, None, ResumePoint | None]:
    """What ``feed`` makes of each line of ``path`` after ``start`` (of every line without one), with
    the lines' errors and notices in their place; returns where a later read takes up.

    ``feed`` is given each decoded line and its number. ``state`` gives the reader's state between two
    lines, kept in the point; ``None`` when the file is to be read whole next time, and then no point
    is returned. The log's crash tail is set on ``session``.
    """
    stop: ResumePoint | None = None
    offset, lines_before = (start.offset, start.line) if start is not None else (0, 0)
    with LogLines(path, start=offset, lines_before=lines_before) as log:
        for line in log.json_lines():
            if state is not None and not line.terminated:
                # A last line without its newline may be half written: read it now, as a whole
                # read would, but take up before it next time.
                stop = ResumePoint(log.consumed, log.consumed_lines, state())
            if line.error is not None:
                yield line.error
            if line.notice is not None:
                yield line.notice
            if line.value is not None:
                yield from feed(line.value, line.number)
        session.crash_tail = log.crash_tail
        if state is not None and stop is None:
            stop = ResumePoint(log.consumed, log.consumed_lines, state())
    return stop


def time_to_json(value: datetime | None) -> str | None:
    """A time as ISO 8601 text, for a reader's state."""
    return value.isoformat() if value is not None else None


def time_from_json(value: JSON) -> datetime | None:
    """The time :func:`time_to_json` wrote."""
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def usage_to_json(usage: Usage | None) -> dict[str, JSON] | None:
    """A usage's buckets, convention and source fields, for a reader's state."""
    if usage is None:
        return None
    return {
        "uncached_input": usage.uncached_input,
        "cache_read": usage.cache_read,
        "cache_write_5m": usage.cache_write_5m,
        "cache_write_1h": usage.cache_write_1h,
        "output": usage.output,
        "convention": usage.convention,
        "raw": dict(usage.raw),
    }


def usage_from_json(value: JSON) -> Usage | None:
    """The usage :func:`usage_to_json` wrote."""
    if not isinstance(value, dict):
        return None
    return Usage(
        uncached_input=value["uncached_input"],
        cache_read=value["cache_read"],
        cache_write_5m=value["cache_write_5m"],
        cache_write_1h=value["cache_write_1h"],
        output=value["output"],
        convention=value["convention"],
        raw=dict(value.get("raw") or {}),
    )
