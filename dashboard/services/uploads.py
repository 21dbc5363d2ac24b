"""Uploads: files (or a zip of a folder) saved under the data folder as a queued ingest job.

The caller enqueues the job's task: services sit below the tasks that call them, so they do not
import them.
"""

from __future__ import annotations

import shutil
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from dashboard.models import IngestJob


class UploadRejected(ValueError):
    """An upload refused before anything was stored: too large, an unsafe archive, a bad name."""


def upload_dir(job: IngestJob) -> Path:
    """A fresh folder for the job's files; the random part keeps a reused job id off old files."""
    return Path(settings.DATA_DIR) / "uploads" / f"{job.pk}-{uuid.uuid4().hex[:12]}"


def upload_create_job(
    *, files: Sequence[UploadedFile], source_name: str, format: str | None, user: Any
) -> IngestJob:
    """Save ``files`` for a new, queued ingest job; the caller enqueues the job's task."""
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
        try:
            for uploaded in files:
                _save_upload(uploaded, folder, limit)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        job.paths = [str(folder)]
        job.save(update_fields=["paths"])
    return job


def _save_upload(uploaded: UploadedFile, folder: Path, limit: int) -> None:
    name = _safe_name(uploaded.name or "upload")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    with target.open("wb") as out:
        for chunk in uploaded.chunks():
            out.write(chunk)
    if name.lower().endswith(".zip"):
        extract_zip(target, folder / Path(name).stem, limit=limit)
        target.unlink()


def _safe_name(name: str) -> str:
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base in {".", ".."}:
        raise UploadRejected(f"{name!r} is not a usable file name")
    return base


def extract_zip(archive: Path, destination: Path, *, limit: int) -> None:
    """Extract ``archive`` under ``destination``, refusing path traversal and oversized contents.

    Sizes are checked from the archive's directory before anything is decompressed, and again
    while writing, since a directory can lie about them.
    """
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as error:
        raise UploadRejected(f"{archive.name}: not a readable zip archive ({error})") from None
    with bundle:
        members = [m for m in bundle.infolist() if not m.is_dir()]
        declared = sum(m.file_size for m in members)
        if declared > limit:
            raise UploadRejected(f"{archive.name}: expands to {declared:,} bytes; the limit is {limit:,}")
        root = destination.resolve()
        for member in members:
            relative = PurePosixPath(member.filename.replace("\\", "/"))
            if relative.is_absolute() or ".." in relative.parts:
                raise UploadRejected(f"{archive.name}: member {member.filename!r} points outside the archive")
            target = (root / relative).resolve()
            if not target.is_relative_to(root):
                raise UploadRejected(f"{archive.name}: member {member.filename!r} points outside the archive")
        written = 0
        for member in members:
            target = root / PurePosixPath(member.filename.replace("\\", "/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(member) as source, target.open("wb") as out:
                while chunk := source.read(1 << 20):
                    written += len(chunk)
                    if written > limit:
                        raise UploadRejected(f"{archive.name}: expands past the limit of {limit:,} bytes")
                    out.write(chunk)
