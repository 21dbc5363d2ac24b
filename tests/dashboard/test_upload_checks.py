"""Uploads refused or trimmed before anything is ingested, and upload files gone once ingested."""

from __future__ import annotations

import io
import struct
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.ingest.uploads import NOT_A_LOG_NOTICE, uploads_remove_expired
from dashboard.models import IngestJob, IngestNotice, Session, Source
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


def test_an_upload_of_a_file_that_is_no_log_is_refused_naming_the_file_and_creates_nothing(
    operator_client: Client, settings: object
) -> None:
    response = upload(operator_client, "notes.txt", b"Remember to rotate the keys.\n")
    _refused(response, "notes.txt: line 1, format: not a JSON-lines log")
    assert not Source.objects.exists()
    assert _left_files(settings) == []


def test_json_lines_of_no_known_format_are_refused_with_the_known_formats(operator_client: Client) -> None:
    response = upload(operator_client, "metrics.jsonl", b'{"cpu": 0.4}\n{"cpu": 0.5}\n')
    _refused(response, "metrics.jsonl: format: unknown log format (known: dsh, claude-code")
    assert "choose one under Format" in response.content.decode()


def test_one_bad_file_refuses_the_whole_upload_and_names_only_it(operator_client: Client) -> None:
    files = [
        SimpleUploadedFile("session.jsonl", log_bytes("good")),
        SimpleUploadedFile("photo.png", b"\x89PNG\r\n\x1a\n"),
    ]
    response = operator_client.post(reverse("dashboard:ingest"), {"files": files, "source": "uploads"})
    _refused(response, "photo.png: line 1, format: not a JSON-lines log")
    assert "session.jsonl:" not in response.content.decode()
    assert not Session.objects.exists()


def test_a_zip_with_no_log_in_it_is_refused(operator_client: Client) -> None:
    response = upload(operator_client, "docs.zip", zipped({"README.md": b"# logs\n", "a/notes.txt": b"x"}))
    _refused(response, "docs.zip: holds no log file")


def test_files_of_a_zip_not_named_like_logs_are_skipped_with_a_notice(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    archive = zipped({"logs/a/session.jsonl": log_bytes("zip-a"), "logs/README.md": b"# fleet logs\n"})
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "logs.zip", archive)
    job = IngestJob.objects.get()
    assert job.status == IngestJob.Status.DONE, job.message
    notice = IngestNotice.objects.get(job=job)
    assert (notice.path, notice.reason) == ("logs.zip/logs/README.md", NOT_A_LOG_NOTICE)


def test_a_log_member_of_a_zip_that_is_no_log_refuses_the_upload(operator_client: Client) -> None:
    archive = zipped({"logs/a/session.jsonl": log_bytes("zip-a"), "logs/b/broken.jsonl": b"not json\n"})
    _refused(upload(operator_client, "logs.zip", archive), "logs.zip/logs/b/broken.jsonl: line 1, format:")


def test_a_chosen_log_named_unlike_a_log_is_still_ingested(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "session.log", log_bytes("renamed"))
    job = IngestJob.objects.get()
    assert (job.status, job.sessions_added) == (IngestJob.Status.DONE, 1), job.message
    assert Session.objects.get().external_id == "renamed"


def test_a_forced_format_accepts_records_no_detector_knows(operator_client: Client) -> None:
    response = upload(operator_client, "odd.jsonl", b'{"cpu": 0.4}\n', format="claude-code")
    assert response.status_code == 302
    assert IngestJob.objects.get().format == "claude-code"
