"""A line stored after a repair is a notice on the ingest, listed beside the errors but never one of them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from dashboard.models import Event, IngestJob, IngestNotice
from tests.dashboard.logs import dsh_lines, write_jsonl

pytestmark = pytest.mark.django_db


def log_with_a_nul(tmp_path: Path) -> Path:
    """A dsh log whose first user message holds a NUL, which no PostgreSQL text can store."""
    lines = dsh_lines("nul-session", turns=2)
    user = next(line for line in lines if line.get("type") == "user/message")
    user["data"]["content"] = "before\u0000after"
    return write_jsonl(tmp_path / "nul-session" / "session.jsonl", lines)


def test_a_repaired_line_is_a_notice_on_the_job_and_not_an_error(tmp_path: Path) -> None:
    path = log_with_a_nul(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", str(path), stdout=out, stderr=err)
    job = IngestJob.objects.get()
    assert (job.error_count, job.notice_count) == (0, 1)
    [notice] = IngestNotice.objects.filter(job=job)
    assert (notice.path, notice.line, notice.field) == (str(path), 3, "json")
    assert "1 U+0000" in notice.reason
    assert f"notice: {path}:3: json: replaced 1 U+0000" in err.getvalue()
    assert "0 errors, 1 notices" in out.getvalue()
    stored = Event.objects.get(session__external_id="nul-session", type="user/message", seq=1)
    assert stored.data["content"] == "before\ufffdafter"


def test_the_json_summary_lists_notices_apart_from_errors(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("ingest", str(log_with_a_nul(tmp_path)), "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert (summary["errors"], summary["error_lines"], summary["notices"]) == (0, [], 1)
    assert summary["notice_lines"][0].endswith("by U+FFFD, which no database text can hold; the line is kept")


def test_the_job_page_lists_the_notices(tmp_path: Path, viewer_client: Client) -> None:
    call_command("ingest", str(log_with_a_nul(tmp_path)), stdout=io.StringIO(), stderr=io.StringIO())
    job = IngestJob.objects.get()
    text = viewer_client.get(job.get_absolute_url()).content.decode()
    assert "<dt>Notices</dt><dd>1</dd>" in text
    assert 'id="notices"' in text
    assert "replaced 1 U+0000 by U+FFFD" in text
    assert "<h2>Errors</h2>" not in text


def test_a_log_without_repairs_shows_no_notices(tmp_path: Path, viewer_client: Client) -> None:
    path = write_jsonl(tmp_path / "clean" / "session.jsonl", dsh_lines("clean", turns=1))
    call_command("ingest", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    job = IngestJob.objects.get()
    assert job.notice_count == 0
    assert 'id="notices"' not in viewer_client.get(job.get_absolute_url()).content.decode()
