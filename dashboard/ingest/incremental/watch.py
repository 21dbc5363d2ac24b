"""Following log files as they are written: ``manage.py ingest --watch`` and the ``cachescope`` command.

The paths are ingested incrementally once, then again a moment after the file system says one of
them changed (watchdog's native observer, or its polling observer where the native one cannot
start), and every few seconds in any case, so a path that appears later, or an event the observer
missed, is caught up. Each ingest that stores something prints one line; a path that vanishes or
cannot be read is named once, until it is back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dashboard.ingest.files import ingest_paths
from dashboard.ingest.summary import IngestSummary

DEBOUNCE_SECONDS = 0.25
"""How long after a change the ingest waits for the rest of a burst of writes (a call's lines)."""
RESCAN_SECONDS = 5.0
"""How often the paths are ingested when the observer says nothing."""


class PathWatcher:
    """Ingests ``paths`` incrementally, now and each time they change, until :meth:`stop`."""

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        source_name: str,
        format: str | None = None,
        out: Callable[[str], None] = print,
        polling: bool = False,
    ) -> None:
        self.paths = [path.absolute() for path in paths]
        self.source_name = source_name
        self.format = format
        self.out = out
        self.polling = polling
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._observer: Any = None
        self._watched: set[Path] = set()
        self._reported: set[str] = set()

    def run(self) -> None:
        """Ingest, then follow the paths until :meth:`stop` (or Ctrl-C in the caller's thread)."""
        self._observer = self._start_observer()
        try:
            while not self._stopped.is_set():
                self._watch_new_paths()
                self.ingest_once()
                self._changed.wait(RESCAN_SECONDS)
                if self._changed.is_set():
                    time.sleep(DEBOUNCE_SECONDS)
                    self._changed.clear()
        finally:
            self._observer.stop()
            self._observer.join(timeout=5)

    def stop(self) -> None:
        """End :meth:`run` after its current ingest."""
        self._stopped.set()
        self._changed.set()

    def ingest_once(self) -> IngestSummary:
        """One incremental ingest of the paths; prints a line when it stored something, and names
        a path that cannot be read the first time it cannot."""
        summary = ingest_paths(
            paths=self.paths, source_name=self.source_name, format=self.format, incremental=True
        )
        problems = {str(error) for error in summary.errors}
        for problem in sorted(problems - self._reported):
            self.out(f"{time.strftime('%H:%M:%S')} cannot read: {problem}")
        self._reported = problems
        if summary.requests_added or summary.events_added or summary.requests_completed:
            self.out(
                f"{time.strftime('%H:%M:%S')} stored {summary.requests_added} calls and "
                f"{summary.events_added} events of {summary.sessions_added + summary.sessions_updated} "
                f"sessions ({summary.sessions_added} new)"
            )
        return summary

    def _start_observer(self) -> Any:
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        observer = PollingObserver(timeout=1) if self.polling else Observer()
        try:
            observer.start()
        except OSError as error:
            # inotify's watch limit or a file system without events: poll instead.
            self.out(f"file events unavailable ({error}); polling every second")
            observer = PollingObserver(timeout=1)
            observer.start()
        return observer

    def _watch_new_paths(self) -> None:
        """Watch each path (a file's folder, for a file) that exists and is not watched yet."""
        from watchdog.events import FileSystemEventHandler

        changed = self._changed

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if not event.is_directory or event.event_type != "opened":
                    changed.set()

        for path in self.paths:
            folder = path if path.is_dir() else path.parent
            if folder in self._watched or not folder.is_dir():
                continue
            try:
                self._observer.schedule(Handler(), str(folder), recursive=path.is_dir())
            except OSError as error:
                self.out(f"cannot watch {folder}: {error}; it is read every {RESCAN_SECONDS:g} s instead")
            self._watched.add(folder)
