"""Importers: every source format read into :mod:`projections.normalized` (DESIGN §3, §4, §8).

``read_sessions(path)`` accepts a log file or a folder (a ``~/.claude/projects`` tree, a
``~/.codex/sessions`` tree, a project folder, a folder of dsh sessions, claude-trace logs,
captures); each file's format is detected from its name and first record, or forced with
``format``. Sessions stream: exhaust one session's ``items`` before asking for the next.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from projections.format_names import FORMAT_NAMES, LOG_SUFFIXES, is_log_name
from projections.formats.anthropic.claude_code import TRANSCRIPT_TYPES, read_claude_code
from projections.formats.anthropic.claude_trace import is_claude_trace_record, read_claude_trace
from projections.formats.anthropic.connectome import is_connectome_record, read_connectome
from projections.formats.dsh.projcache import (
    ProjCache,
    ProjCacheRow,
    find_projcaches,
    read_projcache,
)
from projections.formats.dsh.sessions import read_dsh_session
from projections.formats.openai.codex import is_codex_record, read_codex
from projections.formats.reading.lines import LogLines, is_zstd_path
from projections.formats.reading.resume import CannotResume, ReadEnd, ResumePoint
from projections.formats.traffic.captures import (
    ANTHROPIC_FORMAT,
    OPENAI_FORMAT,
    capture_api,
    is_capture_record,
)
from projections.formats.traffic.captures import read_capture as _read_capture
from projections.normalized import JSON, FormatError, SessionImport

__all__ = [
    "FORMAT_NAMES",
    "LOG_SUFFIXES",
    "RESUMABLE_FORMATS",
    "CannotResume",
    "FormatError",
    "ProjCache",
    "ProjCacheRow",
    "detect_format",
    "find_projcaches",
    "is_log_name",
    "iter_log_files",
    "read_log_file",
    "read_projcache",
    "read_sessions",
]

_DETECT_LINES = 5


def classify_record(value: dict[str, JSON], file_name: str) -> str | None:
    """The format a first record belongs to, or ``None`` when it matches none."""
    if value.get("type") == "session" and "version" in value:
        return "dsh"
    if is_connectome_record(value) or (file_name.startswith("llm-calls") and "timestamp" in value):
        return "connectome"
    if is_claude_trace_record(value):
        return "claude-trace"
    if is_capture_record(value):
        return ANTHROPIC_FORMAT if capture_api(value) == "messages" else OPENAI_FORMAT
    if value.get("type") in TRANSCRIPT_TYPES:
        return "claude-code"
    if is_codex_record(value):
        return "codex"
    return None


def detect_format(path: Path) -> str:
    """Detect the format of one log file by its name and first non-empty record.

    Raises :class:`FormatError` naming the file when it cannot be read or matches no format.
    """
    name = str(path)
    try:
        if path.is_dir():
            raise FormatError(name, None, "path", "is a folder, not a log file")
        if path.name.startswith("session.jsonl") or is_zstd_path(path):
            return "dsh"
        with LogLines(path) as log:
            for line in log.json_lines():
                if line.value is None:
                    assert line.error is not None
                    raise FormatError(
                        name, line.number, "format", f"not a JSON-lines log: {line.error.reason}"
                    )
                found = classify_record(line.value, path.name)
                if found is not None:
                    return found
                if line.number >= _DETECT_LINES:
                    break
    except OSError as error:
        raise FormatError(name, None, "path", f"cannot read: {error.strerror or error}") from None
    known = ", ".join(FORMAT_NAMES)
    raise FormatError(name, None, "format", f"unknown log format (known: {known}); force one with --format")


RESUMABLE_FORMATS = frozenset({"claude-code", "codex", "dsh"})
"""Formats whose reader can take up a grown file where an earlier read stopped (a
:class:`ResumePoint`): Claude Code transcripts, but for a file holding an inline sidechain (whose
lines are grouped across the whole file), Codex rollouts, and plain dsh logs (a zstd one's offsets
are of its decompressed stream). The others, captures and claude-trace logs, are read whole when
they grow, and what they held is found stored and skipped. Any file is skipped at the cost of one
``stat`` while it has not changed."""


def read_log_file(
    path: Path, format_name: str, *, resume: ResumePoint | None = None, end: ReadEnd | None = None
) -> Iterator[SessionImport]:
    """The sessions of one log file of a known format.

    ``end``: filled in with where a later read can take up, once the sessions are exhausted (left
    ``None`` for a format not in :data:`RESUMABLE_FORMATS`). ``resume``: such a point, to read only
    what the file gained since; raises :class:`CannotResume` when the file must be read whole.
    """
    if format_name == "claude-code":
        yield from read_claude_code(path, resume=resume, end=end)
        return
    if format_name == "codex":
        yield from read_codex(path, resume=resume, end=end)
        return
    if format_name == "dsh":
        yield read_dsh_session(path, resume=resume, end=end)
        return
    if resume is not None:
        raise CannotResume(f"{path}: a {format_name} log is read whole")
    yield from _read_file(path, format_name)


def _read_file(path: Path, format_name: str) -> Iterator[SessionImport]:
    if format_name == "dsh":
        yield read_dsh_session(path)
    elif format_name == "claude-code":
        yield from read_claude_code(path)
    elif format_name == "claude-trace":
        yield from read_claude_trace(path)
    elif format_name == "connectome":
        yield from read_connectome(path)
    elif format_name == "codex":
        yield from read_codex(path)
    else:
        yield from _read_capture(path, format_name)


def iter_log_files(folder: Path) -> Iterator[Path]:
    """The log files under ``folder`` in a stable order; a session's file comes before its subagents."""
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if is_log_name(name):
                yield Path(root) / name


def _refused(path: Path, error: FormatError) -> SessionImport:
    return SessionImport(
        external_id=path.name.split(".")[0],
        format="unknown",
        path=str(path),
        items=iter(()),
        fatal=str(error),
    )


def read_sessions(path: Path, *, format: str | None = None) -> Iterator[SessionImport]:
    """The sessions in a log file or a folder of logs.

    ``format`` forces one of :data:`FORMAT_NAMES` for every file. A file named explicitly that
    cannot be read raises :class:`FormatError`; in a folder, such a file gives a session with
    ``fatal`` set, so the walk goes on and the problem stays visible.
    """
    if format is not None and format not in FORMAT_NAMES:
        known = ", ".join(FORMAT_NAMES)
        raise FormatError(str(path), None, "format", f"unknown format {format!r} (known: {known})")
    if path.is_dir():
        for file in iter_log_files(path):
            try:
                found = format or detect_format(file)
            except FormatError as error:
                yield _refused(file, error)
                continue
            yield from _read_file(file, found)
        return
    if not path.is_file():
        raise FormatError(str(path), None, "path", "no such file or folder")
    yield from _read_file(path, format or detect_format(path))
