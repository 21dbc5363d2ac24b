from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from dashboard.models import IngestError, IngestJob, Session
from tests.dashboard.logs import dsh_lines

pytestmark = pytest.mark.django_db


def log_bytes(session_id: str) -> bytes:
    import json

    return "".join(json.dumps(line) + "\n" for line in dsh_lines(session_id, turns=2)).encode()


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(client: Client, name: str, data: bytes, **fields: str):  # type: ignore[no-untyped-def]
    payload = {"files": SimpleUploadedFile(name, data), "source": "uploads", **fields}
    return client.post(reverse("dashboard:ingest"), payload, headers={"HX-Request": "false"})


def test_an_operator_uploads_a_log_and_its_session_appears(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(operator_client, "session.jsonl", log_bytes("uploaded"))
    job = IngestJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == job.get_absolute_url()
    job.refresh_from_db()
    assert (job.kind, job.status, job.sessions_added) == ("upload", "done", 1)
    assert Session.objects.get().external_id == "uploaded"
    page = operator_client.get(job.get_absolute_url())
    assert b'aria-valuenow="100"' in page.content


def test_a_zip_of_a_folder_is_unpacked_and_every_log_ingested(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    archive = zipped({"logs/a/session.jsonl": log_bytes("zip-a"), "logs/b/session.jsonl": log_bytes("zip-b")})
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "logs.zip", archive)
    assert sorted(Session.objects.values_list("external_id", flat=True)) == ["zip-a", "zip-b"]


def test_a_zip_that_climbs_out_of_its_folder_is_refused_and_nothing_is_written(
    operator_client: Client, settings: object
) -> None:
    archive = zipped({"../../escaped.jsonl": log_bytes("evil")})
    response = upload(operator_client, "evil.zip", archive)
    assert response.status_code == 400
    assert "points outside the archive" in response.content.decode()
    assert not IngestJob.objects.exists()
    assert not (Path(settings.DATA_DIR) / "escaped.jsonl").exists()  # type: ignore[attr-defined]


def test_an_upload_over_the_limit_is_refused_before_it_is_read(
    operator_client: Client, settings: object
) -> None:
    settings.CACHESCOPE_MAX_UPLOAD_BYTES = 100  # type: ignore[attr-defined]
    response = upload(operator_client, "session.jsonl", log_bytes("big"))
    assert response.status_code == 400
    assert "the limit is 100 bytes" in response.content.decode()
    assert not IngestJob.objects.exists()


def test_a_zip_that_expands_past_the_limit_is_refused(operator_client: Client, settings: object) -> None:
    settings.CACHESCOPE_MAX_UPLOAD_BYTES = 50_000  # type: ignore[attr-defined]
    archive = zipped({"bomb.jsonl": b"x" * 10_000_000})
    assert len(archive) < 50_000
    response = upload(operator_client, "bomb.zip", archive)
    assert response.status_code == 400
    assert "expands to 10,000,000 bytes" in response.content.decode()


def test_a_viewer_cannot_upload(viewer_client: Client) -> None:
    response = upload(viewer_client, "session.jsonl", log_bytes("nope"))
    assert response.status_code == 403
    assert not IngestJob.objects.exists()
    assert b"Upload logs" not in viewer_client.get(reverse("dashboard:ingest")).content


def test_bad_lines_of_an_upload_are_listed_on_its_job_page(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    lines = log_bytes("partly-bad").split(b"\n")
    lines[2] = b'{"type": "user/message", "seq": '
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "session.jsonl", b"\n".join(lines))
    job = IngestJob.objects.get()
    error = IngestError.objects.get(job=job)
    assert (error.line, Path(error.path).name) == (3, "session.jsonl")
    page = operator_client.get(job.get_absolute_url()).content.decode()
    assert "Errors" in page
    assert error.reason in page


def test_a_job_page_names_each_bad_file_as_uploaded_never_by_its_server_path(
    operator_client: Client, django_capture_on_commit_callbacks, settings: object
) -> None:  # type: ignore[no-untyped-def]
    broken = log_bytes("broken").split(b"\n")
    broken[2] = b'{"type": "user/message", "seq": '
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "broken-json.jsonl", b"\n".join(broken))
        upload(operator_client, "fleet.zip", zipped({"a/session.jsonl": b"\n".join(broken)}))
    single, folder = IngestJob.objects.order_by("pk")
    assert IngestError.objects.get(job=single).path == "broken-json.jsonl"
    # A zip unpacks into a folder named as the zip.
    assert IngestError.objects.get(job=folder).path == "fleet/a/session.jsonl"
    uploads = str(Path(settings.DATA_DIR) / "uploads")  # type: ignore[attr-defined]
    for job in (single, folder):
        page = operator_client.get(job.get_absolute_url()).content.decode()
        assert uploads not in page


def test_a_finished_job_with_errors_says_how_many_and_lists_them_without_asking_for_a_reload(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    broken = log_bytes("broken").split(b"\n")
    broken[2] = broken[3] = b'{"type": "user/message", "seq": '
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "broken-json.jsonl", b"\n".join(broken))
    job = IngestJob.objects.get()
    page = operator_client.get(job.get_absolute_url()).content.decode()
    assert '<td class="small wrap">broken-json.jsonl</td>' in page
    assert "Done, 2 errors" in page
    assert "Reload to see the errors" not in page  # they are listed below
    polled = operator_client.get(job.get_absolute_url(), headers={"HX-Request": "true"}).content.decode()
    assert "Reload to see the errors" in polled  # the fragment a poll fetched as the job ended
    listed = operator_client.get(reverse("dashboard:ingest")).content.decode()
    assert '<span class="badge done">Done, 2 errors</span>' in listed


def test_a_finished_job_links_the_sessions_it_added_or_updated(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        upload(
            operator_client,
            "logs.zip",
            zipped({"a/session.jsonl": log_bytes("a"), "b/session.jsonl": log_bytes("b")}),
        )
    first = IngestJob.objects.get()
    assert sorted(first.sessions.values_list("external_id", flat=True)) == ["a", "b"]
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "session.jsonl", log_bytes("a"))  # the same log again: nothing changes
    again = IngestJob.objects.exclude(pk=first.pk).get()
    assert again.duplicates > 0
    assert not again.sessions.exists()

    page = operator_client.get(first.get_absolute_url()).content.decode()
    listed = f'href="{reverse("dashboard:sessions")}?job={first.pk}"'
    assert listed in page
    assert "Open the 2 sessions it added or updated" in page
    for session in Session.objects.all():
        assert session.get_absolute_url() in page
    assert "Open the" not in operator_client.get(again.get_absolute_url()).content.decode()


def test_the_sessions_list_narrows_to_one_jobs_sessions(
    operator_client: Client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        upload(operator_client, "session.jsonl", log_bytes("first"))
        upload(operator_client, "session.jsonl", log_bytes("second"))
    second = IngestJob.objects.order_by("pk").last()
    assert second is not None
    response = operator_client.get(reverse("dashboard:sessions"), {"job": second.pk})
    assert [s.external_id for s in response.context["page"].rows] == ["second"]
    assert f"ingest #{second.pk}</a> added or updated" in response.content.decode()
    bad = operator_client.get(reverse("dashboard:sessions"), {"job": "latest"})
    assert "job: &#x27;latest&#x27; is not an ingest job&#x27;s number (ignored)" in bad.content.decode()
