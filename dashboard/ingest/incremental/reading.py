"""The sessions of the files under some paths that changed since their last ingest, each read from
where that ingest stopped when its reader can take up there.

:class:`ChangedFiles` walks the paths (one ``stat`` a file), looks each file up in the states its
source's earlier ingests recorded, and yields the sessions of the files that changed. The store
tells it how each session went (:meth:`ChangedFiles.stored`); once all of a file's sessions are
stored, the file's new state is recorded in the same transaction, so the state never runs ahead of
the rows. A session the store refused leaves the file's state as it was: the next ingest reads
that part again, and the rows already stored are found there and counted once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from dashboard.ingest.incremental.file_states import (
    Change,
    FileLook,
    file_look,
    file_state_record,
    resume_point,
)
from dashboard.models import FileState, Session, Source
from projections.format_names import is_log_name
from projections.normalized import FormatError, LineError, SessionImport

if TYPE_CHECKING:
    from projections.formats.reading.resume import ReadEnd, ResumePoint

ProgressCallback = Callable[[int], None]


@dataclass
class FileCounts:
    """How many files an ingest skipped, took up where the last read stopped, or read whole."""

    unchanged: int = 0
    waiting: int = 0
    """New files whose first line is not whole yet."""
    resumed: int = 0
    whole: int = 0
    rewritten: int = 0


def log_files(path: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """The log files under ``path`` (``path`` itself when it is a file) with their ``stat``, in the
    order :func:`projections.formats.iter_log_files` walks them: a folder's files, then its folders."""
    if not path.is_dir():
        yield path, path.stat()
        return
    try:
        entries = sorted(os.scandir(path), key=lambda entry: entry.name)
    except OSError:
        return
    folders = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=True):
            folders.append(entry)
        elif is_log_name(entry.name):
            try:
                yield Path(entry.path), entry.stat()
            except OSError:
                continue  # gone between the listing and the stat
    for folder in folders:
        yield from log_files(Path(folder.path))


@dataclass(frozen=True, slots=True)
class _Pending:
    path: Path
    stat: os.stat_result
    look: FileLook
    state: FileState | None


FIRST_LINE_PEEK = 64 * 1024


def first_line_whole(path: Path) -> bool:
    """Whether a new file's first line has its newline (or is longer than we peek at): one still
    being written, a header or a session's first record, waits for it rather than be read as a
    log that names no session."""
    try:
        with path.open("rb") as fh:
            head = fh.read(FIRST_LINE_PEEK)
    except OSError:
        return True  # the read names the problem
    return b"\n" in head or len(head) == FIRST_LINE_PEEK


class ChangedFiles:
    """The files under ``paths`` that changed since ``source``'s last ingest of them, looked at when
    made (a ``stat`` each and one query), and then their sessions (:meth:`imports`).

    Looking loads no reader, so an ingest that finds nothing changed starts none of them.
    """

    def __init__(
        self,
        paths: Iterable[Path],
        *,
        source: Source,
        format: str | None,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.source = source
        self.format = format
        self.on_progress = on_progress
        self.errors: list[LineError] = []
        """Paths that are missing or cannot be read, and files whose sessions could not be read."""
        self.counts = FileCounts()
        self._refused = False
        # The states without the readers' own, which are read only for a file that grew.
        states = {
            state.path: state
            for state in FileState.objects.filter(source=source).defer("reader_state", "session_ids")
        }
        self.pending = [entry for root in paths for entry in self._look(root.absolute(), states)]
        self._looked_errors = list(self.errors)
        # What one walk of imports() did that a second walk, a deadlocked job's retry, must not
        # undo or count again: see imports().
        self._reader_states_read: set[Path] = set()
        self._walking = -1
        self._sessions_deleted: set[Path] = set()

    def _look(self, root: Path, states: dict[str, FileState]) -> Iterator[_Pending]:
        if not root.exists():
            self.errors.append(LineError(str(root), None, "path", "no such file or folder"))
            return
        try:
            for path, stat in log_files(root):
                state = states.get(str(path))
                look = file_look(path, stat, state)
                if look.change is Change.UNCHANGED:
                    self.counts.unchanged += 1
                elif state is None and not first_line_whole(path):
                    self.counts.waiting += 1
                else:
                    yield _Pending(path, stat, look, state)
        except OSError as error:
            self.errors.append(LineError(str(root), None, "path", f"cannot read: {error.strerror}"))

    def stored(self, imported: SessionImport, session: Session | None) -> None:
        """Told by the store once it has stored ``imported`` (``session``) or refused it (``None``)."""
        if session is None:
            self._refused = True

    def imports(self) -> Iterator[SessionImport]:
        """Every session of every changed file in turn.

        Walked again, by the retry of a job that deadlocked, it reads the same files from the same
        points: each file's state as the first walk read it, not as that walk committed it.
        So the rows that walk committed are found again as duplicates, which the job then counts
        as its own (``IngestSummary.include_earlier``), and the files are counted once.
        """
        self.errors[:] = self._looked_errors
        self.counts.resumed = self.counts.whole = self.counts.rewritten = 0
        # By index: a rewritten file may queue or change the entries after the one being read.
        for index, pending in enumerate(self.pending):
            self._walking = index
            yield from self._file(pending)

    def _file(self, pending: _Pending) -> Iterator[SessionImport]:
        from projections.formats import detect_format

        path, stat, look, state = pending.path, pending.stat, pending.look, pending.state
        if state is not None and path not in self._reader_states_read:
            state.refresh_from_db(fields=["reader_state", "session_ids"])
            self._reader_states_read.add(path)
        try:
            format_name = self.format or (state.format if state is not None else detect_format(path))
        except FormatError as error:
            yield _refused(path, error)
            return
        if look.change is Change.REWRITTEN and state is not None:
            # Read whole and stored anew: what the old bytes gave must not stay beside what the new
            # ones give (a call the file no longer holds, an event at a seq it now fills otherwise).
            self.counts.rewritten += 1
            if path not in self._sessions_deleted:
                Session.objects.filter(source=self.source, external_id__in=state.session_ids).delete()
                self._read_again_sharing(state)
                # Once committed, a second walk would delete what the first stored from the new bytes.
                # Robust: a follow-up callback of the same commit that fails must not skip it.
                transaction.on_commit(lambda: self._sessions_deleted.add(path), robust=True)
        point = resume_point(state) if state is not None and look.change is Change.GROWN else None
        if state is not None and format_name != state.format:
            point = None
        from projections.formats.reading.resume import ReadEnd

        end = ReadEnd()
        names: list[str] = list(state.session_ids) if state is not None and point is not None else []
        self._refused = False
        try:
            sessions = self._sessions(path, format_name, point, end)
            for imported in sessions:
                if imported.external_id not in names:
                    names.append(imported.external_id)
                yield imported
        except (FormatError, OSError) as error:
            reason = error.error.reason if isinstance(error, FormatError) else f"cannot read: {error}"
            self.errors.append(LineError(str(path), None, "path", reason))
            return
        if self.on_progress is not None:
            self.on_progress(stat.st_size - (point.offset if point is not None else 0))
        if not self._refused:
            file_state_record(
                source=self.source,
                path=path,
                stat=stat,
                format=format_name,
                point=end.point,
                session_ids=names,
            )

    def _read_again_sharing(self, rewritten: FileState) -> None:
        """Forget the state of every other file that held one of the sessions just deleted, and read
        it whole after the others: its part of those sessions went with them."""
        names = set(rewritten.session_ids)
        others = (
            FileState.objects.filter(source=self.source).exclude(pk=rewritten.pk).only("path", "session_ids")
        )
        sharing = [other for other in others if names.intersection(other.session_ids)]
        if not sharing:
            return
        FileState.objects.filter(pk__in=[other.pk for other in sharing]).delete()
        queued = {pending.path: index for index, pending in enumerate(self.pending)}
        for other in sharing:
            path = Path(other.path)
            if not path.is_file():
                continue
            again = _Pending(path, path.stat(), FileLook(Change.NEW), None)
            index = queued.get(path)
            if index is not None and index > self._walking:
                # Still to be read in this walk, from the state just forgotten: read it whole.
                self.pending[index] = again
            else:
                # Not queued, or read already in this walk: appended to the list imports() walks,
                # so this ingest reads it (again) whole.
                self.pending.append(again)

    def _sessions(
        self, path: Path, format_name: str, point: ResumePoint | None, end: ReadEnd
    ) -> Iterator[SessionImport]:
        """The file's sessions from ``point``, or from its start when its reader cannot take up there."""
        from projections.formats import CannotResume, read_log_file

        if point is not None:
            sessions = read_log_file(path, format_name, resume=point, end=end)
            try:
                first = next(sessions, None)
            except CannotResume:
                pass
            else:
                self.counts.resumed += 1
                if first is not None:
                    yield first
                    yield from sessions
                return
        self.counts.whole += 1
        yield from read_log_file(path, format_name, end=end)


def _refused(path: Path, error: FormatError) -> SessionImport:
    return SessionImport(
        external_id=path.name.split(".")[0],
        format="unknown",
        path=str(path),
        items=iter(()),
        fatal=str(error),
    )
