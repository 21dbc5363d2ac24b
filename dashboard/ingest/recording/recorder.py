"""Storing what the proxy passed, on a thread of its own so a client never waits for the database.

The proxy hands each finished call to :meth:`Recorder.submit`, which only puts it on a bounded
queue. The recorder's thread takes what has queued, turns each call into its claude-trace record,
and stores the calls session by session. When storing fails (the database is down, the disk is
full) the batch goes to the :class:`~dashboard.ingest.recording.spool.Spool`; spooled batches are stored
first, oldest first, once storing works again, so a session's calls keep their order.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import InterfaceError, OperationalError, close_old_connections, connection

from dashboard.ingest.files import IngestSummary
from dashboard.ingest.recorded import ingest_recorded
from dashboard.ingest.recording.archive import Archive, resume_conversations
from dashboard.ingest.recording.capture import CapturedCall
from dashboard.ingest.recording.conversations import Conversations
from dashboard.ingest.recording.spool import Spool
from projections.formats.anthropic.recorded import RecordedCall

log = logging.getLogger("cachescope.record")

QUEUE_SIZE = 1000
"""Calls waiting for the thread; past this a call is dropped rather than held in memory."""
BATCH_SIZE = 200
RETRY_SECONDS = 5.0
"""How long the thread waits before trying the spool again after storing failed."""
STORAGE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, OSError)
"""Failures of the storage itself (the database unreachable or locked, the disk full), which pass:
the batch is spooled and tried again. Anything else (a constraint a batch breaks, a bug) would fail
the same way on every try, so it is logged and counted, not retried."""

Store = Callable[..., IngestSummary]
""":func:`~dashboard.ingest.recorded.ingest_recorded`'s signature."""


@dataclass(slots=True)
class RecorderStats:
    """What the recorder did since it started; printed by the command."""

    stored: int = 0
    spooled: int = 0
    dropped: int = 0
    failed: int = 0


class Recorder:
    """Stores captured calls for ``source_name`` in the background."""

    def __init__(
        self,
        *,
        source_name: str,
        spool: Spool,
        archive: Archive | None = None,
        store: Store = ingest_recorded,
        retry_seconds: float = RETRY_SECONDS,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        self.source_name = source_name
        self.spool = spool
        self.archive = archive
        self.store = store
        self.retry_seconds = retry_seconds
        self.stats = RecorderStats()
        self.conversations = Conversations()
        self.submitted = 0
        """Calls handed over so far (stored, spooled, dropped or still queued)."""
        self._queue: queue.Queue[CapturedCall | None] = queue.Queue(maxsize=queue_size)
        self._thread = threading.Thread(target=self._run, name="cachescope-recorder", daemon=True)
        self._next_retry = 0.0
        self._idle = threading.Condition()

    def start(self) -> None:
        self._thread.start()

    def submit(self, call: CapturedCall) -> None:
        """Queue a call for storage; never blocks (a full queue drops the call and says so)."""
        self.submitted += 1
        try:
            self._queue.put_nowait(call)
        except queue.Full:
            self.stats.dropped += 1
            with self._idle:
                self._idle.notify_all()
            log.warning(
                "record: queue full, dropped call %s; %d dropped since start", call.call_id, self.dropped
            )

    @property
    def dropped(self) -> int:
        """Calls lost: a full queue or a full spool."""
        return self.stats.dropped + self.spool.dropped_calls

    def wait_idle(self, timeout: float, *, submitted: int = 0) -> bool:
        """Wait until at least ``submitted`` calls were handed over and every one handed over is stored
        or spooled; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self.submitted < submitted or self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Store what is queued, then end the thread."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            if self.archive is not None:
                resume_conversations(self.conversations, self.archive.folder)
            self._store_spooled()
            while True:
                batch, taken, stopping = self._take()
                if batch:
                    self._store_batch(batch)
                elif self.spool.pending() and time.monotonic() >= self._next_retry:
                    self._store_spooled()
                with self._idle:
                    for _ in range(taken):
                        self._queue.task_done()
                    self._idle.notify_all()
                if stopping:
                    return
        finally:
            connection.close()

    def _take(self) -> tuple[list[CapturedCall], int, bool]:
        """What has queued (waiting a little for the first), how many items that took, and whether
        the stop sign was among them."""
        try:
            item = self._queue.get(timeout=min(self.retry_seconds, 1.0))
        except queue.Empty:
            return [], 0, False
        batch: list[CapturedCall] = []
        taken = 1
        while item is not None:
            batch.append(item)
            if len(batch) >= BATCH_SIZE:
                return batch, taken, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch, taken, False
            taken += 1
        return batch, taken, True

    def _store_batch(self, batch: list[CapturedCall]) -> None:
        sessions: dict[str, list[RecordedCall]] = {}
        for call in batch:
            self._place(call)
            try:
                record = call.trace_record()
            except Exception:
                # A call the recorder cannot describe is a bug: say so, keep the thread going.
                log.exception("record: call %s could not be turned into a record", call.call_id)
                self.stats.failed += 1
                continue
            sessions.setdefault(call.session_id, []).append(RecordedCall(call.call_id, record))
        if self.archive is not None:
            for session_id, calls in sessions.items():
                self.archive.append(session_id, calls)
        # Spooled batches are older: they go first, and while they cannot, the new ones join them.
        spool_first = bool(self.spool.pending()) and not self._store_spooled()
        for session_id, calls in sessions.items():
            if spool_first or not self._store(session_id, calls, origin="proxy"):
                spool_first = True
                if self.spool.put(session_id, calls):
                    self.stats.spooled += len(calls)

    def _place(self, call: CapturedCall) -> None:
        """Give a call the proxy did not place its session, in the order calls finished (a
        conversation's calls finish in the order they were made: each waits for the previous)."""
        if not call.session_id:
            call.session_id = self.conversations.place_body(
                call.api, call.request_json(), call.session_header
            ).session_id
            if call.status is not None and call.status < 400:
                self.conversations.answered(call.session_id, call.response_id())

    def _store_spooled(self) -> bool:
        """Store spooled batches, oldest first; ``True`` when the spool is empty afterwards."""
        for path in self.spool.pending():
            try:
                spooled = self.spool.read(path)
            except (ValueError, OSError) as error:
                log.error("record: skipping a damaged spool file: %s", error)
                path.rename(path.with_suffix(".damaged"))
                continue
            if not self._store(spooled.session_id, spooled.calls, origin=str(path)):
                return False
            self.spool.remove(path)
        return True

    def _store(self, session_id: str, calls: Sequence[RecordedCall], *, origin: str) -> bool:
        """Store one session's calls; ``False`` when the storage failed and they must wait."""
        try:
            close_old_connections()
            summary = self.store(
                source_name=self.source_name, session_id=session_id, calls=calls, path=origin
            )
        except STORAGE_ERRORS as error:
            log.warning("record: storing %d call(s) failed, spooling: %s", len(calls), error)
            # A connection that failed mid-transaction is unusable: the next try opens a new one.
            with contextlib.suppress(*STORAGE_ERRORS):
                connection.close()
            self._next_retry = time.monotonic() + self.retry_seconds
            return False
        except Exception:
            log.exception(
                "record: %d call(s) of session %s cannot be stored; dropped", len(calls), session_id
            )
            self.stats.failed += len(calls)
            return True
        for problem in summary.errors:
            log.warning("record: %s: %s: %s", problem.path, problem.field, problem.reason)
        self.stats.stored += summary.requests_added
        return True
