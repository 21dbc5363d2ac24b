"""What a log file's change since its last ingest asks for, and its state recorded after a read.

A file is *unchanged* when its size, modification time and identity (device and inode) are the
recorded ones: one ``stat`` says so. Otherwise the bytes the last read consumed are checked by two
hashes, of the file's head and of the bytes just before the recorded offset: when both hold and the
file is no shorter than the offset it *grew* (a file put in its place with the same bytes, as a copy
or a sync tool's rename leaves it, grew too), and is read from the offset; when either fails, or
the file is shorter than the offset, it was *rewritten*, and is read whole and its sessions stored
anew.
"""

from __future__ import annotations

import enum
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dashboard.models import FileState, Source

if TYPE_CHECKING:
    from projections.formats.reading.resume import ResumePoint

HEAD_BYTES = 4096
TAIL_BYTES = 4096
"""How much of a file's head, and of the bytes before its offset, the hashes cover: enough to tell a
rewritten file from a grown one (a transcript's first line names its session, its last lines its
latest call) at the cost of two small reads."""


class Change(enum.Enum):
    NEW = "new"
    UNCHANGED = "unchanged"
    GROWN = "grown"
    REWRITTEN = "rewritten"


@dataclass(frozen=True, slots=True)
class FileLook:
    """A file's change since ``state`` was recorded, and why, for the ingest's lines."""

    change: Change
    reason: str = ""


def file_id(stat: os.stat_result) -> str:
    """The device and inode of a file: another file put in its place has others."""
    return f"{stat.st_dev}:{stat.st_ino}"


def content_hashes(path: Path, offset: int) -> tuple[str, str]:
    """BLAKE2b of the file's first bytes up to ``offset``, and of the bytes just before it."""
    with path.open("rb") as fh:
        head = fh.read(min(HEAD_BYTES, offset))
        start = max(0, offset - TAIL_BYTES)
        fh.seek(start)
        tail = fh.read(offset - start)
    return _digest(head), _digest(tail)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_look(path: Path, stat: os.stat_result, state: FileState | None) -> FileLook:
    """What the change of the file at ``path`` (whose ``stat`` was just taken) since ``state`` asks for."""
    if state is None:
        return FileLook(Change.NEW)
    same_file = file_id(stat) == state.file_id
    if same_file and stat.st_size == state.size and stat.st_mtime_ns == state.mtime_ns:
        return FileLook(Change.UNCHANGED)
    if stat.st_size < state.offset:
        return FileLook(Change.REWRITTEN, f"shrank from {state.offset} to {stat.st_size} bytes")
    try:
        hashes = content_hashes(path, state.offset)
    except OSError as error:
        return FileLook(Change.REWRITTEN, f"could not be checked: {error.strerror or error}")
    if hashes != (state.head_hash, state.tail_hash):
        where = "was replaced by another file" if not same_file else "was rewritten"
        return FileLook(Change.REWRITTEN, f"{where}: its first {state.offset} bytes are not those read")
    return FileLook(Change.GROWN)


def resume_point(state: FileState) -> ResumePoint | None:
    """Where a read of the grown file takes up, or ``None`` when it is read whole."""
    from projections.formats.reading.resume import ResumePoint

    if state.reader_state is None:
        return None
    return ResumePoint(offset=state.offset, line=state.line, state=state.reader_state)


def file_state_record(
    *,
    source: Source,
    path: Path,
    stat: os.stat_result,
    format: str,
    point: ResumePoint | None,
    session_ids: list[str],
) -> None:
    """Record what a read of ``path`` consumed; ``stat`` is the one taken before the read, so a file
    that grew during it is looked at again next time."""
    offset = point.offset if point is not None else stat.st_size
    try:
        head_hash, tail_hash = content_hashes(path, offset)
    except OSError:
        return  # gone since it was read: the next ingest that finds it reads it whole
    FileState.objects.update_or_create(
        source=source,
        path=str(path),
        defaults={
            "format": format,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "file_id": file_id(stat),
            "offset": offset,
            "line": point.line if point is not None else 0,
            "head_hash": head_hash,
            "tail_hash": tail_hash,
            "reader_state": point.state if point is not None else None,
            "session_ids": session_ids,
        },
    )
