"""Ingest: files in any supported format → sessions, events, requests and blocks in the database.

Each session is written in a transaction or savepoint of its own, so a session is either stored
whole or not at all, and a bad session never takes its neighbours in the same file down with it; a
folder's sessions share a transaction a group at a time (:data:`GROUP_SESSIONS`). Ingest is idempotent:
events are keyed by ``(session, seq)`` and requests by ``(session, key)``, so the same file twice
adds nothing, and a log that has grown since adds only its new events (the rows are written by
:mod:`dashboard.ingest.session_writer`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from django.db import DataError, IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from dashboard.fleet.rollups import RollupBuckets
from dashboard.ingest.blocks import BlockStore
from dashboard.ingest.followups import (
    followups_clear_delivered,
    followups_clear_later,
    followups_due,
    followups_gathered,
    followups_pending,
    followups_record,
)
from dashboard.ingest.incremental.reading import ChangedFiles
from dashboard.ingest.session_writer import stored_under_another_source, write_session
from dashboard.ingest.summary import IngestSummary
from dashboard.jobs.tally import job_tally_add, job_tally_read
from dashboard.models import IngestError, IngestJob, IngestNotice, Session, Source
from dashboard.models.ingest import SAVED_FILE_KINDS
from dashboard.storage.db_outage import (
    DatabaseUnavailable,
    database_label,
    is_unavailable,
    unavailable_reason,
)
from dashboard.storage.gc_pause import gc_paused
from projections.formats import read_sessions
from projections.formats.reading.times import plausible_times
from projections.normalized import FormatError, LineError, LineNotice, SessionImport

PROJCACHE_NAME = "session_projcache.json"
GROUP_SESSIONS = 50
GROUP_SECONDS = 1.0
"""A folder's sessions are committed a group at a time, each group when it holds this many
sessions or has taken this long: one commit and one refresh of the usage rollups for the group
rather than for each of its sessions, while a long ingest still shows its sessions as it goes and
holds its locks (SQLite's one writer, a session's row) no longer than about a second."""

Note = TypeVar("Note", IngestError, IngestNotice)

ProgressCallback = Callable[[int], None]
"""Called with the number of input bytes finished since the last call."""


def input_size(paths: Iterable[Path]) -> int:
    """Total bytes of the files under ``paths``, for a progress bar."""
    total = 0
    for path in paths:
        if path.is_dir():
            for folder, _dirs, files in os.walk(path):
                total += sum(_file_size(Path(folder) / name) for name in files)
        else:
            total += _file_size(path)
    return total


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def ingest_paths(
    *,
    paths: Iterable[Path],
    source_name: str,
    format: str | None = None,
    job: IngestJob | None = None,
    on_progress: ProgressCallback | None = None,
    incremental: bool = False,
    changed: ChangedFiles | None = None,
) -> IngestSummary:
    """Read every session under ``paths`` and store it under the source ``source_name``.

    Bad lines are collected in the summary (and on ``job`` when given); a path that cannot be read at
    all is reported as an error naming it, and the other paths go on.

    ``incremental``: skip the files unchanged since this source's last incremental ingest of them,
    and read a grown one from where that ingest stopped (:mod:`dashboard.ingest.incremental`);
    ``changed``: those files, looked at already (the paths are then theirs).
    """
    summary = IngestSummary()
    try:
        # What the job's earlier attempts committed, read before this one commits anything.
        earlier = job_tally_read(job_id=job.pk) if job is not None else None
        source, _ = Source.objects.get_or_create(name=source_name)
        blocks = BlockStore()
        if incremental and changed is None:
            changed = ChangedFiles(paths, source=source, format=format, on_progress=on_progress)
        if changed is not None:
            # What looking at the files found comes first; reading them adds to the same list.
            summary.errors = changed.errors
        # Each session's transaction deletes the outbox rows of the sessions before it; their
        # follow-ups are enqueued a batch of sessions at a time.
        with followups_clear_later(), followups_gathered() as gathered:
            if changed is not None:
                imports = changed.imports()
            else:
                imports = _imports(paths, format, summary, on_progress)
            on_stored = changed.stored if changed is not None else None
            job_id = job.pk if job is not None else None
            while _store_group(imports, source, summary, blocks, job_id, on_stored):
                pass
            link_parents(source)
    except (OperationalError, InterfaceError) as error:
        if isinstance(error, DatabaseUnavailable) or not is_unavailable(error):
            raise
        raise DatabaseUnavailable(
            database_label(), unavailable_reason(error), summary.stored_text()
        ) from error
    if changed is not None:
        summary.files = changed.counts
    summary.followups_pending.extend(gathered.refused)
    if job is not None and earlier is not None:
        summary.include_earlier(earlier)
        ingest_job_record(job, summary)
    return summary


def _store_group(
    imports: Iterator[SessionImport],
    source: Source,
    summary: IngestSummary,
    blocks: BlockStore,
    job_id: int | None = None,
    on_stored: Callable[[SessionImport, Session | None], None] | None = None,
) -> bool:
    """Store sessions of ``imports`` in one transaction, each in a savepoint of its own, until
    :data:`GROUP_SESSIONS` are stored or :data:`GROUP_SECONDS` have passed; their usage rollups are
    refreshed once, and what they added counted on job ``job_id``, before it commits. Whether
    ``imports`` may hold more.

    A session the database refuses is rolled back to its savepoint alone, as in a transaction of
    its own; an error that stops the ingest rolls back the group, which a retry stores again.
    """
    rollups = RollupBuckets()
    started = time.monotonic()
    more = False
    before, changed_before = summary.added_counts(), len(summary.changed_session_ids)
    with transaction.atomic():
        # First of the group's commit callbacks: a follow-up that then fails (the database gone
        # since) does not make what was committed look unstored.
        transaction.on_commit(summary.note_committed)
        for count, imported in enumerate(imports, start=1):
            stored = ingest_session(imported, source=source, summary=summary, blocks=blocks, rollups=rollups)
            if on_stored is not None:
                on_stored(imported, stored)
            if stored is not None and imported.format == "dsh":
                _check_host_projections(Path(imported.path), source, summary)
            if count >= GROUP_SESSIONS or time.monotonic() - started >= GROUP_SECONDS:
                more = True
                break
        rollups.refresh()
        if job_id is not None:
            added = {name: value - before[name] for name, value in summary.added_counts().items()}
            job_tally_add(
                job_id=job_id, counts=added, session_ids=summary.changed_session_ids[changed_before:]
            )
    summary.note_committed()
    return more


def _imports(
    paths: Iterable[Path], format: str | None, summary: IngestSummary, on_progress: ProgressCallback | None
) -> Iterator[SessionImport]:
    """Every session under ``paths`` in turn; a path that is missing or cannot be read is reported."""
    for path in paths:
        if not path.exists():
            summary.errors.append(
                LineError(path=str(path), line=None, field="path", reason="no such file or folder")
            )
            continue
        try:
            yield from _path_imports(path, format, on_progress)
        except FormatError as error:
            summary.errors.append(error.error)


def _path_imports(
    path: Path, format: str | None, on_progress: ProgressCallback | None
) -> Iterator[SessionImport]:
    finished: set[str] = set()
    current = ""
    for imported in read_sessions(path, format=format):
        if on_progress and imported.path != current:
            # Sessions arrive file by file, so a new path means the previous file is done.
            if current and current not in finished:
                finished.add(current)
                on_progress(_file_size(Path(current)))
            current = imported.path
        yield imported
    if on_progress and current and current not in finished:
        on_progress(_file_size(Path(current)))


def _check_host_projections(log: Path, source: Source, summary: IngestSummary) -> None:
    """Compare a dsh host's own projection rows (``session_projcache.json`` beside its log) with ours."""
    cache = log.parent / PROJCACHE_NAME
    if not cache.is_file():
        return
    # Loaded for the dsh logs that have one: the fold engine is no part of storing a transcript.
    from dashboard.refold.projcache import projcache_ingest

    result = projcache_ingest(cache, source_name=source.name)
    if result.error:
        summary.errors.append(LineError(str(cache), None, "projcache", result.error))


def ingest_session(
    imported: SessionImport,
    *,
    source: Source,
    summary: IngestSummary,
    blocks: BlockStore | None = None,
    rollups: RollupBuckets | None = None,
) -> Session | None:
    """Store one imported session atomically; return it, or ``None`` when it was rolled back.

    ``rollups``: gathers the session's usage buckets for the caller to refresh before its
    transaction commits; without it they are refreshed in the session's own transaction.
    """
    blocks = blocks or BlockStore()
    imported = plausible_times(imported, now=timezone.now())
    if imported.fatal:
        summary.errors.append(
            LineError(path=imported.path, line=None, field="session", reason=imported.fatal)
        )
        if Session.objects.filter(source=source, external_id=imported.external_id[:200]).exists():
            # A refused copy of a session already stored says nothing about the stored log: leave it.
            summary.sessions_unchanged += 1
        # A refused file (a binary, a CSV, an unknown header version) is an error on the job and
        # nothing else: an empty session row in its name would count in the fleet as a session.
        return None
    elsewhere = stored_under_another_source(imported, source)
    if elsewhere is not None:
        # The same log under another name: reported with where it is, so an admin can move it.
        summary.elsewhere.append((elsewhere.external_id, elsewhere.pk, elsewhere.source.name))
        return None
    errors_before, notices_before = len(summary.errors), len(summary.notices)
    unchanged_before = summary.sessions_unchanged
    try:
        with gc_paused(), transaction.atomic():
            followups_clear_delivered()
            requests_before = summary.requests_added + summary.requests_completed
            written = write_session(imported, source, summary, blocks)
            session = written.session
            if summary.requests_added + summary.requests_completed > requests_before:
                # In the session's transaction (or the caller's), so the overview's sums commit
                # with the requests.
                buckets = rollups or RollupBuckets()
                if written.new_hours is not None:
                    buckets.add_hours(source.pk, written.new_hours)
                else:
                    buckets.add_session(session.pk)
                if rollups is None:
                    buckets.refresh()
            changed = summary.sessions_unchanged == unchanged_before
            if changed:
                # The outbox row commits with the rows, so follow-ups cut off after the commit are resent.
                followups_record(session.pk)
    except FormatError as error:
        # The log could not be read to its end: nothing of this session is kept, not half of it.
        del summary.errors[errors_before:]
        del summary.notices[notices_before:]
        summary.errors.append(error.error)
        blocks.rollback()
        return None
    except (DataError, IntegrityError) as error:
        # A value the readers let through but the database refuses: only this session's savepoint
        # is rolled back, so the other sessions of a batch or a folder are still stored.
        del summary.errors[errors_before:]
        del summary.notices[notices_before:]
        reason = f"the database refused this session, nothing of it was stored: {str(error).splitlines()[0]}"
        summary.errors.append(LineError(imported.path, None, "session", reason))
        blocks.rollback()
        return None
    except BaseException:
        blocks.rollback()
        raise
    blocks.commit()
    summary.session_ids.append(session.pk)
    if not changed and not followups_pending(session.pk):
        # A copy of a log already stored (an exporter's retry, a folder ingested again) changes no
        # fold or analysis: re-running them would cost a full analysis of the session for nothing.
        # Follow-ups a down broker refused are still sent: sending the log again is one way back.
        return session
    if changed:
        summary.changed_session_ids.append(session.pk)
    session_id = session.pk

    def follow_up() -> None:
        if not followups_due(session_id):
            summary.followups_pending.append(session_id)

    transaction.on_commit(follow_up)
    return session


def link_parents(source: Source) -> int:
    """Attach subagent and forked sessions to their parent once both are stored; return how many."""
    orphans = Session.objects.filter(source=source, parent__isnull=True).exclude(parent_external_id="")
    children = list(orphans.order_by("pk").values_list("id", "parent_external_id"))
    if not children:
        return 0
    parents = dict(
        Session.objects.filter(source=source, external_id__in={name for _, name in children}).values_list(
            "external_id", "id"
        )
    )
    linked = 0
    # One transaction, so PostgreSQL flushes its log once rather than once a child; by id, so
    # concurrent batches update the children they share in one order (no deadlock).
    with transaction.atomic():
        for child_id, parent_name in children:
            parent_id = parents.get(parent_name)
            if parent_id is not None and parent_id != child_id:
                linked += Session.objects.filter(pk=child_id).update(parent_id=parent_id)
    return linked


def path_as_given(text: str, roots: Sequence[str], *, saved: bool = False) -> str:
    """``text`` with each path under one of ``roots`` (the files or folders a job was given) cut to
    the part below it: a file of a folder reads as its path within the folder, so a file uploaded
    reads as the name it was uploaded under. With ``saved``, the roots are the server's folders of
    saved uploads, which are named by their last part alone: they are no business of a job's page."""
    for root in roots:
        folder = root.rstrip(os.sep)
        if not folder:
            continue  # everything is under /: cutting it would only garble the paths
        if saved and text in (root, folder):
            return Path(folder).name
        prefix = folder + os.sep
        if text.startswith(prefix):
            return text.removeprefix(prefix)
        if os.path.isabs(folder):
            text = text.replace(prefix, "")  # a path quoted in a reason
    return text


def shown_on_job(job: IngestJob, text: str) -> str:
    """``text`` as ``job``'s page shows it: :func:`path_as_given` under the job's own paths, which for
    an upload or an API batch are the server's folders of saved files."""
    return path_as_given(text, [str(path) for path in job.paths], saved=job.kind in SAVED_FILE_KINDS)


def ingest_job_record(job: IngestJob, summary: IngestSummary) -> None:
    """Write ``summary`` on ``job``: its counts, its errors and notices as rows, and the job done."""

    def rows(model: type[Note], notes: Iterable[LineError | LineNotice]) -> list[Note]:
        return [
            model(
                job=job,
                path=shown_on_job(job, n.path)[-1000:],
                line=n.line,
                field=n.field[:200],
                reason=shown_on_job(job, n.reason),
            )
            for n in notes
        ]

    IngestError.objects.bulk_create(rows(IngestError, summary.errors))
    IngestNotice.objects.bulk_create(rows(IngestNotice, summary.notices))
    job.sessions.add(*summary.changed_session_ids)
    job.sessions_elsewhere.add(*(pk for _external_id, pk, _source in summary.elsewhere))
    job.sessions_added = summary.sessions_added
    job.sessions_updated = summary.sessions_updated
    job.sessions_unchanged = summary.sessions_unchanged
    job.events_added = summary.events_added
    job.requests_added = summary.requests_added
    job.duplicates = summary.duplicates
    job.duplicate_events = summary.duplicate_events
    job.duplicate_requests = summary.duplicate_requests
    job.error_count = len(summary.errors)
    # Counted from the rows: an upload notes the empty files it skipped before the ingest ran.
    job.notice_count = IngestNotice.objects.filter(job=job).count()
    job.status = IngestJob.Status.DONE
    job.finished_at = timezone.now()
    job.save()
