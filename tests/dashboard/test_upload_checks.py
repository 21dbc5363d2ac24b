"""Uploads refused or trimmed before anything is ingested, and upload files gone once ingested."""

from __future__ import annotations

import io
import struct
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import IngestJob, IngestNotice, Session
from dashboard.services.uploads import uploads_remove_expired
from tests.dashboard.test_uploads import log_bytes, upload, zipped

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _own_data_folder(settings: object, tmp_path: Path) -> None:
    """Each test its own data folder, so files another test keeps on purpose (a failed API batch
    waits there for a retry) are not counted as this upload's leftovers."""
    settings.DATA_DIR = tmp_path  # type: ignore[attr-defined]


def _uploads(settings: object) -> Path:
    return Path(settings.DATA_DIR) / "uploads"  # type: ignore[attr-defined]


def _left_files(settings: object) -> list[Path]:
    folder = _uploads(settings)
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def _refused(response, text: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 400
    assert text in response.content.decode()
    assert not IngestJob.objects.exists()


def test_an_upload_of_no_file_is_refused_with_a_form_error(operator_client: Client) -> None:
    response = operator_client.post(reverse("dashboard:ingest"), {"source": "uploads"})
    _refused(response, "Choose at least one file")


def test_an_upload_of_a_file_named_dot_dot_is_refused_with_a_form_error(operator_client: Client) -> None:
    boundary = "cachescope-boundary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="source"\r\n\r\nuploads\r\n'
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="files"; filename=".."\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
        '{"type": "session/start"}\n\r\n'
        f"--{boundary}--\r\n"
    ).encode()
    response = operator_client.post(
        reverse("dashboard:ingest"), body, content_type=f"multipart/form-data; boundary={boundary}"
    )
    _refused(response, "Choose at least one file")


def test_an_upload_of_only_empty_files_is_refused(operator_client: Client) -> None:
    _refused(
        upload(operator_client, "logs.zip", zipped({"a.jsonl": b"", "b/c.jsonl": b""})), "every file is empty"
    )


def test_empty_files_in_a_zip_are_skipped_with_a_notice_each(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    archive = zipped(
        {"logs/a/session.jsonl": log_bytes("zip-a"), "logs/empty.jsonl": b"", "logs/b/x.jsonl": b""}
    )
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "logs.zip", archive)
    job = IngestJob.objects.get()
    assert job.status == IngestJob.Status.DONE, job.message
    assert list(Session.objects.values_list("external_id", flat=True)) == ["zip-a"]
    skipped = sorted(Path(n.path).name for n in IngestNotice.objects.filter(job=job))
    assert skipped == ["empty.jsonl", "x.jsonl"]
    assert job.notice_count == 2
    assert "empty" in operator_client.get(job.get_absolute_url()).content.decode()


def test_a_zip_of_more_files_than_the_limit_is_refused_before_extraction(
    operator_client: Client, settings: object
) -> None:
    settings.CACHESCOPE_UPLOAD_MAX_FILES = 50  # type: ignore[attr-defined]
    archive = zipped({f"logs/{i}.jsonl": b"" for i in range(51)})
    _refused(upload(operator_client, "many.zip", archive), "has 51 files; the limit is 50")
    assert _left_files(settings) == []


def test_a_zip_member_name_over_255_bytes_is_refused(operator_client: Client) -> None:
    long = "é" * 128 + ".jsonl"  # 262 bytes in UTF-8, 134 characters
    _refused(
        upload(operator_client, "long.zip", zipped({f"logs/{long}": log_bytes("x")})), "longer than 255 bytes"
    )


def test_a_zip_with_a_file_where_another_member_needs_a_folder_is_refused(operator_client: Client) -> None:
    archive = zipped({"a": log_bytes("x"), "a/b.jsonl": log_bytes("y")})
    _refused(upload(operator_client, "clash.zip", archive), "both a file and a folder")


def test_a_zip_nested_deeper_than_the_limit_is_refused(operator_client: Client) -> None:
    deep = "/".join(["d"] * 2000) + "/session.jsonl"
    _refused(upload(operator_client, "deep.zip", zipped({deep: log_bytes("x")})), "folders deep")


def test_a_zip_with_an_absolute_member_is_refused(operator_client: Client) -> None:
    _refused(
        upload(operator_client, "abs.zip", zipped({"/etc/session.jsonl": log_bytes("x")})),
        "outside the archive",
    )


def _understate_sizes(archive: bytes, actual: int, stated: int) -> bytes:
    """The archive with its one member's uncompressed size rewritten, in both headers, to ``stated``."""
    data = bytearray(archive)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.index(signature)
        assert struct.unpack_from("<I", data, at + offset)[0] == actual
        struct.pack_into("<I", data, at + offset, stated)
    return bytes(data)


def test_a_zip_whose_directory_understates_a_size_is_refused_not_a_server_error(
    operator_client: Client, settings: object
) -> None:
    settings.CACHESCOPE_MAX_UPLOAD_BYTES = 50_000  # type: ignore[attr-defined]
    real = b"x" * 1_000_000
    archive = _understate_sizes(zipped({"bomb.jsonl": real}), len(real), 10)
    with zipfile.ZipFile(io.BytesIO(archive)) as check:
        assert check.infolist()[0].file_size == 10
    response = upload(operator_client, "liar.zip", archive)
    _refused(response, "liar.zip")
    assert _left_files(settings) == []


def test_an_ingested_upload_leaves_no_file_behind(
    operator_client: Client, settings: object, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "logs.zip", zipped({"logs/a/session.jsonl": log_bytes("zip-a")}))
    job = IngestJob.objects.get()
    assert job.status == IngestJob.Status.DONE
    assert Session.objects.count() == 1
    assert _left_files(settings) == []
    assert not any(Path(p).exists() for p in job.paths)


def test_a_failed_uploads_files_are_kept_for_a_retry_then_deleted_after_the_retention(
    operator_client: Client, settings: object
) -> None:
    settings.CACHESCOPE_UPLOAD_RETENTION_DAYS = 7  # type: ignore[attr-defined]
    upload(operator_client, "session.jsonl", log_bytes("kept"))  # no on-commit run: stays queued
    job = IngestJob.objects.get()
    IngestJob.objects.filter(pk=job.pk).update(status=IngestJob.Status.FAILED)
    assert uploads_remove_expired() == 0
    assert all(Path(p).exists() for p in job.paths)
    assert uploads_remove_expired(now=timezone.now() + timedelta(days=8)) == 1
    assert not any(Path(p).exists() for p in job.paths)
    assert IngestJob.objects.get(pk=job.pk).paths == []
