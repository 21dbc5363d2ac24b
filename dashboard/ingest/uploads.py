"""Uploads: files (or a zip of a folder) saved under the data folder as a queued ingest job.

The caller enqueues the job's task: services sit below the tasks that call them, so they do not
import them.
"""

from __future__ import annotations

import errno
import shutil
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from dashboard.ingest.upload_contents import (
    UploadContents,
    check_archive_folder,
    check_uploaded_file,
    no_logs_reason,
)
from dashboard.models import IngestJob, IngestNotice

NO_SPACE = "no space left on the data folder"
"""What an upload or a batch that filled the disk is told; the operator frees space or grows it."""


def is_disk_full(error: OSError) -> bool:
    """Whether ``error`` is the file system out of space (or of the user's quota)."""
    return error.errno in (errno.ENOSPC, errno.EDQUOT)


class UploadRejected(ValueError):
    """An upload refused before anything was stored: too large, an unsafe archive, a bad name, no logs.

    ``reasons`` holds one line per file at fault, so a page can list them.
    """

    def __init__(self, *reasons: str) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = list(reasons)


def upload_dir(job: IngestJob) -> Path:
    """A fresh folder for the job's files; the random part keeps a reused job id off old files."""
    return Path(settings.DATA_DIR) / "uploads" / f"{job.pk}-{uuid.uuid4().hex[:12]}"


UPLOAD_MAX_DEPTH = 32
"""Folders a zip member may sit under: real log trees are a few levels deep."""
NAME_PART_MAX_BYTES = 255
"""Bytes of one file or folder name, the limit of common file systems."""
NAME_MAX_BYTES = 1000
"""Bytes of a member's whole path, which the job's error and notice rows keep."""
EMPTY_FILE_NOTICE = "empty: skipped, there is nothing in it to ingest"
NOT_A_LOG_NOTICE = "not named like a log: skipped, as the ingest of a folder skips it"


@dataclass
class _Saved:
    """What an upload kept: the count of files written, and the empty files skipped."""

    files: int = 0
    skipped_empty: list[str] = field(default_factory=list)
    contents: UploadContents = field(default_factory=UploadContents)


def upload_create_job(
    *, files: Sequence[UploadedFile], source_name: str, format: str | None, user: Any
) -> IngestJob:
    """Save ``files`` for a new, queued ingest job; the caller enqueues the job's task.

    Empty files, and files in an archive not named like logs, are skipped, each with a notice on the
    job. A file that does not read as a log refuses the whole upload, naming each such file and why;
    so does an upload with nothing left to ingest, or one the data folder has no room for. No job,
    and no file, is left behind by any refusal.
    """
    if not files:
        raise UploadRejected("choose at least one file to upload")
    uploads_remove_expired()  # each upload clears what earlier ones left past their retention
    limit = settings.CACHESCOPE_MAX_UPLOAD_BYTES
    total = sum(f.size or 0 for f in files)
    if total > limit:
        raise UploadRejected(f"the upload is {total:,} bytes; the limit is {limit:,} bytes")
    with transaction.atomic():
        job = IngestJob.objects.create(
            kind=IngestJob.Kind.UPLOAD,
            label=", ".join(f.name or "upload" for f in files)[:500],
            source_name=source_name,
            format=format or "",
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        folder = upload_dir(job)
        saved = _Saved()
        try:
            for uploaded in files:
                _save_upload(uploaded, folder, limit, saved, format)
            if saved.contents.refused:
                raise UploadRejected(*saved.contents.refused)
            if not saved.files:
                raise UploadRejected("nothing to ingest: every file is empty")
        except OSError as error:
            # The job row rolls back with the transaction and the folder goes: no half-written file
            # is left for an ingest to read as a cut log.
            shutil.rmtree(folder, ignore_errors=True)
            if is_disk_full(error):
                raise UploadRejected(
                    f"{NO_SPACE}: nothing was saved; free some space and upload again"
                ) from None
            raise
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        skipped = [(name, EMPTY_FILE_NOTICE) for name in saved.skipped_empty] + [
            (name, NOT_A_LOG_NOTICE) for name in saved.contents.skipped
        ]
        IngestNotice.objects.bulk_create(
            IngestNotice(job=job, path=name[-1000:], line=None, field="file", reason=reason)
            for name, reason in skipped
        )
        job.paths = [str(folder)]
        job.notice_count = len(skipped)
        job.save(update_fields=["paths", "notice_count"])
    return job


def upload_remove_files(job: IngestJob) -> None:
    """Delete the files an upload job saved, once ingested; never anything outside the uploads folder."""
    root = (Path(settings.DATA_DIR) / "uploads").resolve()
    for path in job.paths:
        folder = Path(path).resolve()
        if folder.is_relative_to(root) and folder != root:
            shutil.rmtree(folder, ignore_errors=True)


def uploads_remove_expired(*, now: datetime | None = None) -> int:
    """Delete the files of uploads and API batches left unfinished (failed or never queued) for longer than
    ``CACHESCOPE_UPLOAD_RETENTION_DAYS``; return how many jobs lost their files.

    They are kept that long so an operator can retry; a job that is done lost its files already.
    """
    cutoff = (now or timezone.now()) - timedelta(days=settings.CACHESCOPE_UPLOAD_RETENTION_DAYS)
    stale = IngestJob.objects.filter(
        kind__in=(IngestJob.Kind.UPLOAD, IngestJob.Kind.API),
        status__in=(IngestJob.Status.FAILED, IngestJob.Status.NOT_QUEUED),
        created_at__lt=cutoff,
    ).exclude(paths=[])
    removed = 0
    for job in stale:
        upload_remove_files(job)
        IngestJob.objects.filter(pk=job.pk).update(paths=[])
        removed += 1
    return removed


def _save_upload(uploaded: UploadedFile, folder: Path, limit: int, saved: _Saved, format: str | None) -> None:
    name = _safe_name(uploaded.name or "upload")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    with target.open("wb") as out:
        for chunk in uploaded.chunks():
            out.write(chunk)
    if name.lower().endswith(".zip"):
        extracted = folder / Path(name).stem
        files_before = saved.files
        extract_zip(target, extracted, limit=limit, saved=saved)
        target.unlink()
        skipped_before = len(saved.contents.skipped)
        check_archive_folder(extracted, name, format, saved.contents)
        skipped = len(saved.contents.skipped) - skipped_before
        saved.files -= skipped
        if skipped and saved.files == files_before:
            saved.contents.refused.append(no_logs_reason(name))
    elif target.stat().st_size == 0:
        target.unlink()
        saved.skipped_empty.append(name)
    else:
        check_uploaded_file(target, name, format, saved.contents)
        saved.files += 1


def _safe_name(name: str) -> str:
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base in {".", ".."}:
        raise UploadRejected(f"{name!r} is not a usable file name")
    return base


def _shown(name: str) -> str:
    return repr(name if len(name) <= 120 else f"{name[:60]}…{name[-40:]}")


def check_zip_members(archive_name: str, members: Sequence[zipfile.ZipInfo], *, max_files: int) -> None:
    """Refuse an archive whose members could not be written as listed, before anything is extracted.

    Checked: the number of files, each name (no absolute path or ``..``, no part over
    :data:`NAME_PART_MAX_BYTES` bytes, no more than :data:`UPLOAD_MAX_DEPTH` folders deep), no name
    twice, and no name that is a file for one member and a folder for another.
    """
    files = [m for m in members if not m.is_dir()]
    if len(files) > max_files:
        raise UploadRejected(f"{archive_name}: has {len(files):,} files; the limit is {max_files:,}")
    file_paths: set[PurePosixPath] = set()
    folders: set[PurePosixPath] = set()
    for member in members:
        relative = _member_path(archive_name, member.filename)
        folders.update(relative.parents)
        if member.is_dir():
            folders.add(relative)
        elif relative in file_paths:
            raise UploadRejected(f"{archive_name}: member {_shown(member.filename)} appears twice")
        else:
            file_paths.add(relative)
    clash = next(iter(sorted(file_paths & folders)), None)
    if clash is not None:
        raise UploadRejected(
            f"{archive_name}: {_shown(str(clash))} is both a file and a folder in the archive"
        )


def _member_path(archive_name: str, filename: str) -> PurePosixPath:
    name = filename.replace("\\", "/")
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise UploadRejected(f"{archive_name}: member {_shown(filename)} points outside the archive")
    if len(relative.parts) - 1 > UPLOAD_MAX_DEPTH:
        raise UploadRejected(
            f"{archive_name}: member {_shown(filename)} is {len(relative.parts) - 1:,} folders deep; "
            f"the limit is {UPLOAD_MAX_DEPTH}"
        )
    if len(name.encode()) > NAME_MAX_BYTES:
        raise UploadRejected(
            f"{archive_name}: member {_shown(filename)} is longer than {NAME_MAX_BYTES} bytes"
        )
    if any(len(part.encode()) > NAME_PART_MAX_BYTES for part in relative.parts):
        raise UploadRejected(
            f"{archive_name}: member {_shown(filename)} has a name longer than {NAME_PART_MAX_BYTES} bytes"
        )
    return relative


def extract_zip(archive: Path, destination: Path, *, limit: int, saved: _Saved | None = None) -> None:
    """Extract ``archive`` under ``destination`` after :func:`check_zip_members`, refusing oversized contents.

    Sizes are checked from the archive's directory before anything is decompressed, and again from
    the bytes really written, since a directory can lie about them. A member that turns out empty is
    not kept, and is noted in ``saved``.
    """
    saved = saved if saved is not None else _Saved()
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as error:
        raise UploadRejected(f"{archive.name}: not a readable zip archive ({error})") from None
    with bundle:
        members = bundle.infolist()
        check_zip_members(archive.name, members, max_files=settings.CACHESCOPE_UPLOAD_MAX_FILES)
        files = [m for m in members if not m.is_dir()]
        declared = sum(m.file_size for m in files)
        if declared > limit:
            raise UploadRejected(f"{archive.name}: expands to {declared:,} bytes; the limit is {limit:,}")
        root = destination.resolve()
        written = 0
        for member in files:
            relative = PurePosixPath(member.filename.replace("\\", "/"))
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            try:
                with bundle.open(member) as source, target.open("wb") as out:
                    while chunk := source.read(1 << 20):
                        size += len(chunk)
                        if written + size > limit:
                            raise UploadRejected(f"{archive.name}: expands past the limit of {limit:,} bytes")
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
                raise UploadRejected(
                    f"{archive.name}: member {_shown(member.filename)} cannot be read ({error})"
                ) from None
            written += size
            if size == 0:
                target.unlink()
                saved.skipped_empty.append(f"{archive.name}/{relative}")
            else:
                saved.files += 1
