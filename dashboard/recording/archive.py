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
import re
from collections.abc import Sequence
from pathlib import Path

from projections.formats.recorded import RecordedCall

log = logging.getLogger("cachescope.record")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class Archive:
    """Appends each session's records to ``folder/<session>.jsonl``."""

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
            self.folder.mkdir(parents=True, exist_ok=True)
            with self.path(session_id).open("a", encoding="utf-8") as log_file:
                log_file.write(lines)
        except OSError as error:
            self.failures += 1
            log.warning("record: the archive of session %s cannot be written: %s", session_id, error)
            return False
        return True
