"""The recorded calls as claude-trace logs on disk: one ``<session>.jsonl`` per session.

The store keeps what the analysis needs of a call (its blocks, usage, ids, the provider's diagnosis),
not the answer's text or every header. The archive keeps each record whole, as the recorder built it
(credentials already removed), so the answers can be read again, and a session can be ingested
again from it with ``manage.py ingest`` (``--format openai-capture`` for OpenAI sessions) after the
importers learn more. It grows with the calls, a full copy of each request body: it is on unless
``record --no-archive``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dashboard.ingest.recording.conversations import Conversations
from dashboard.ingest.recording.private_files import private_folder, private_open
from projections.formats.anthropic.recorded import RecordedCall

log = logging.getLogger("cachescope.record")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class Archive:
    """Appends each session's records to ``folder/<session>.jsonl``, 0600 in a 0700 folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.failures = 0

    def path(self, session_id: str) -> Path:
        """The log of a session, named for its id (made safe for a file name), so an ingest of the file
        names the same session."""
        return self.folder / f"{_UNSAFE.sub('_', session_id)[:200]}.jsonl"

    def append(self, session_id: str, calls: Sequence[RecordedCall]) -> bool:
        """Add ``calls`` to the session's log; ``False`` (logged, counted) when the disk refuses."""
        lines = "".join(json.dumps(call.record) + "\n" for call in calls)
        try:
            private_folder(self.folder)
            with os.fdopen(
                private_open(self.path(session_id), append=True), "a", encoding="utf-8"
            ) as log_file:
                log_file.write(lines)
        except OSError as error:
            self.failures += 1
            log.warning("record: the archive of session %s cannot be written: %s", session_id, error)
            return False
        return True


RESUME_WITHIN_SECONDS = 24 * 3600
"""Sessions whose log was written this recently are picked up again by a restarted proxy."""
_TAIL_STEP = 64 * 1024


def resume_conversations(conversations: Conversations, folder: Path) -> int:
    """Take up the conversations recently recorded in ``folder``; return how many."""
    count = 0
    for session_id, record in last_records(folder):
        if isinstance(record, dict):
            conversations.resume(session_id, record)
            count += 1
    return count


def last_records(folder: Path, *, within_seconds: float = RESUME_WITHIN_SECONDS) -> Iterator[tuple[str, Any]]:
    """Each recently written session log's name and last record, oldest log first.

    A restarted proxy reads these to know the conversations it was recording, so their next calls
    join the same sessions and name the right previous answer. A log whose last line is not a
    record (cut short by a full disk) is skipped.
    """
    if not folder.is_dir():
        return
    now = time.time()
    logs = [(path.stat().st_mtime, path) for path in folder.glob("*.jsonl")]
    for written, path in sorted(logs):
        if now - written > within_seconds:
            continue
        try:
            yield path.name.removesuffix(".jsonl"), json.loads(_last_line(path))
        except (OSError, ValueError):
            continue


def _last_line(path: Path) -> bytes:
    """The last non-empty line of a file, read backwards from its end (a log can be large)."""
    with path.open("rb") as log_file:
        end = log_file.seek(0, os.SEEK_END)
        tail = b""
        position = end
        while position > 0:
            step = min(_TAIL_STEP, position)
            position -= step
            log_file.seek(position)
            tail = log_file.read(step) + tail
            stripped = tail.rstrip(b"\n")
            if b"\n" in stripped:
                return stripped.rsplit(b"\n", 1)[1]
        return tail.rstrip(b"\n")
