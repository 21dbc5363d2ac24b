"""The recorder in a process of its own, the way ``manage.py record`` runs it.

Storing a call (parsing, rendering its blocks, analysing its session) is Python work that holds the
interpreter lock. On the proxy's own process it would take turns with the event loop, and every
stream through the proxy would wait for it: with 50 streams at once that added about 100 ms to the
time to first byte. In a child process it runs beside the proxy, which only pickles each finished
call onto a pipe. The child runs a :class:`~dashboard.ingest.recording.recorder.Recorder`, so the queue,
the spool and the order of storing are the ones the tests check on a thread.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
from pathlib import Path
from typing import Any

from dashboard.ingest.recording.capture import CapturedCall
from dashboard.ingest.recording.spool import Spool

log = logging.getLogger("cachescope.record")

QUEUE_SIZE = 1000
NICENESS = 10
_STORED, _SPOOLED, _DROPPED, _FAILED = range(4)


class RecorderProcess:
    """Hands finished calls to a recorder in a child process; never blocks the caller."""

    def __init__(
        self, *, source_name: str, spool: Spool, archive: Path | None, queue_size: int = QUEUE_SIZE
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self.spool = spool
        self.dropped_here = 0
        self._queue: Any = context.Queue(maxsize=queue_size)
        self._counts: Any = context.Array("q", 4)
        self._process = context.Process(
            target=serve,
            args=(
                self._queue,
                self._counts,
                source_name,
                spool.folder,
                spool.max_bytes,
                spool.max_files,
                archive,
            ),
            name="cachescope-recorder",
        )

    def start(self) -> None:
        self._process.start()

    def submit(self, call: CapturedCall) -> None:
        """Queue a call for the child; a full queue drops it and says so."""
        try:
            self._queue.put_nowait(call)
        except queue.Full:
            self.dropped_here += 1
            log.warning(
                "record: queue full, dropped call %s; %d dropped since start", call.call_id, self.dropped
            )

    def counts(self) -> dict[str, int]:
        """Stored, spooled, dropped and failed calls so far, as the child last reported them."""
        values = list(self._counts)
        return {
            "stored": values[_STORED],
            "spooled": values[_SPOOLED],
            "dropped": values[_DROPPED] + self.dropped_here,
            "failed": values[_FAILED],
        }

    @property
    def dropped(self) -> int:
        return self.counts()["dropped"]

    def failure(self) -> str:
        """Why the child is gone while it should run ("" while it runs)."""
        if self._process.is_alive() or self._process.exitcode is None:
            return ""
        return (
            f"the recorder process ended with exit code {self._process.exitcode}; calls are no longer stored"
        )

    def stop(self, timeout: float = 60.0) -> None:
        """Let the child store what is queued, then wait for it to end (ending it past ``timeout``)."""
        if not self._process.is_alive():
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            log.error("record: the recorder's queue stayed full for %.0f s", timeout)
        else:
            self._process.join(timeout)
        if self._process.is_alive():
            log.error(
                "record: the recorder did not finish in %.0f s; what it held is in the spool or lost", timeout
            )
            self._process.terminate()
            self._process.join(5)


def serve(
    calls: Any,
    counts: Any,
    source_name: str,
    spool_folder: Path,
    max_bytes: int,
    max_files: int,
    archive: Path | None,
) -> None:
    """The child: relay calls from the pipe to a :class:`Recorder` until the stop sign comes."""
    # Ctrl-C reaches the whole process group; the parent decides when the recorder stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Storing can wait; forwarding cannot: on a busy machine the proxy gets the CPU first.
    os.nice(NICENESS)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from dashboard.ingest.recording.archive import Archive
    from dashboard.ingest.recording.recorder import Recorder

    recorder = Recorder(
        source_name=source_name,
        spool=Spool(spool_folder, max_bytes=max_bytes, max_files=max_files),
        archive=Archive(archive) if archive is not None else None,
    )
    recorder.start()
    while True:
        try:
            call = calls.get(timeout=1.0)
        except queue.Empty:
            _publish(counts, recorder)
            continue
        if call is None:
            break
        recorder.submit(call)
        _publish(counts, recorder)
    recorder.stop()
    _publish(counts, recorder)


def _publish(counts: Any, recorder: Any) -> None:
    stats = recorder.stats
    counts[_STORED] = stats.stored
    counts[_SPOOLED] = stats.spooled
    counts[_DROPPED] = recorder.dropped
    counts[_FAILED] = stats.failed
