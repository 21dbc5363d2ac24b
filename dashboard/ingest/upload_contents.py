"""What an upload holds: every file must be a log Cachescope can read, checked before a job exists.

A job for files that are not logs would run, read nothing and report "done, 0 sessions", leaving
an operator to guess why. So each saved file is checked the way the ingest will see it — its name
(a folder walk reads only log names) and its first records (:func:`detect_format`) — and any file
that fails is named with its reason, and the whole upload is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# The readers (projections.formats) are imported inside the checks: the ingest page and the API import
# this module through the uploads service, and every command that starts Django imports them.

RENAMED_SUFFIX = ".jsonl"
"""Added to a file uploaded by hand whose content is a log but whose name a folder walk would skip."""


@dataclass
class UploadContents:
    """The reasons files of an upload cannot be ingested, and the archive members skipped as no logs."""

    refused: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def check_uploaded_file(path: Path, shown: str, format: str | None, contents: UploadContents) -> None:
    """Check one file the user chose: a log whatever its name; one named unlike a log is renamed."""
    from projections.formats import is_log_name

    reason = _unreadable_reason(path, format)
    if reason is not None:
        contents.refused.append(f"{shown}: {reason}")
    elif not is_log_name(path.name):
        path.rename(path.with_name(path.name + RENAMED_SUFFIX))


def check_archive_folder(folder: Path, archive: str, format: str | None, contents: UploadContents) -> None:
    """Check an extracted archive: members named like logs must read as logs; others are skipped.

    A zipped ``~/.claude/projects`` tree may hold a stray README or ``.DS_Store``; the ingest's folder
    walk passes over such files, so they are listed as skipped rather than refused.
    """
    from projections.formats import is_log_name

    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            shown = f"{archive}/{path.relative_to(folder).as_posix()}"
            if not is_log_name(name):
                contents.skipped.append(shown)
                continue
            reason = _unreadable_reason(path, format)
            if reason is not None:
                contents.refused.append(f"{shown}: {reason}")


def no_logs_reason(archive: str) -> str:
    from projections.formats import LOG_SUFFIXES

    suffixes = ", ".join(LOG_SUFFIXES)
    return f"{archive}: holds no log file (logs are named {suffixes})"


def _unreadable_reason(path: Path, format: str | None) -> str | None:
    """Why ``path`` cannot be ingested, named by line and field, or ``None`` when it reads as a log."""
    from projections.formats import FormatError, detect_format

    try:
        detect_format(path)
    except FormatError as error:
        if format is not None and error.error.field == "format" and error.error.line is None:
            return None  # a forced format reads files whose first records no detector knows
        where = f"line {error.error.line}, " if error.error.line is not None else ""
        reason = error.error.reason.replace("; force one with --format", "; choose one under Format")
        return f"{where}{error.error.field}: {reason}"
    return None
