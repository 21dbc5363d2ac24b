"""The recorder's spool: batches of recorded calls kept on disk while they cannot be stored.

One file per batch under ``CACHESCOPE_DATA_DIR/record-spool/`` (0600 in a 0700 folder: the calls'
prompts are in them): a first line naming the session,
then one ``{"call_id", "record"}`` line per call. Records are written as the store would get them,
so credentials never reach the spool either. The spool is bounded in bytes and files; a batch that
would pass either bound is dropped, logged and counted, because the client's call has already
succeeded and nothing is gained by filling the disk.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dashboard.ingest.recording.private_files import private_folder, private_open
from projections.formats.anthropic.recorded import RecordedCall

log = logging.getLogger("cachescope.record")

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_FILES = 10_000


@dataclass(frozen=True, slots=True)
class SpooledBatch:
    """A batch read back from the spool."""

    path: Path
    session_id: str
    calls: list[RecordedCall]


class Spool:
    """A bounded folder of batches waiting for storage; oldest first."""

    def __init__(
        self, folder: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_files: int = DEFAULT_MAX_FILES
    ) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.dropped_calls = 0
        self._lock = threading.Lock()

    def pending(self) -> list[Path]:
        """The spooled batch files, oldest first."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("*.jsonl"))

    def size(self) -> tuple[int, int]:
        """Bytes and files the spool holds now."""
        files = self.pending()
        return sum(_size(path) for path in files), len(files)

    def put(self, session_id: str, calls: Sequence[RecordedCall]) -> bool:
        """Keep a batch; ``False`` (and the calls counted as dropped) when it does not fit or the disk
        refuses it."""
        lines = [json.dumps({"session": session_id})]
        lines += [json.dumps({"call_id": call.call_id, "record": call.record}) for call in calls]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        with self._lock:
            held, files = self.size()
            if files + 1 > self.max_files or held + len(data) > self.max_bytes:
                return self._drop(calls, f"the spool is full ({files} files, {held} bytes)")
            name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.jsonl"
            try:
                private_folder(self.folder)
                partial = self.folder / f".{name}.part"
                with os.fdopen(private_open(partial, append=False), "wb") as out:
                    out.write(data)
                os.replace(partial, self.folder / name)
            except OSError as error:
                return self._drop(calls, f"the spool cannot be written: {error}")
        return True

    def read(self, path: Path) -> SpooledBatch:
        """A spooled batch; ``ValueError`` naming the file and line when it is damaged."""
        session_id = ""
        calls: list[RecordedCall] = []
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                try:
                    value = json.loads(line)
                    if number == 1:
                        session_id = str(value["session"])
                    else:
                        calls.append(RecordedCall(call_id=str(value["call_id"]), record=value["record"]))
                except (ValueError, KeyError, TypeError) as error:
                    raise ValueError(f"{path}:{number}: not a spooled call: {error}") from None
        return SpooledBatch(path=path, session_id=session_id, calls=calls)

    def remove(self, path: Path) -> None:
        """Forget a batch once it is stored."""
        path.unlink(missing_ok=True)

    def _drop(self, calls: Sequence[RecordedCall], reason: str) -> bool:
        self.dropped_calls += len(calls)
        log.warning(
            "record: dropped %d call(s) because %s; %d dropped since start",
            len(calls),
            reason,
            self.dropped_calls,
        )
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
