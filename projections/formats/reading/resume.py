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

from dataclasses import dataclass
from datetime import datetime

from projections.normalized import JSON, Usage


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
