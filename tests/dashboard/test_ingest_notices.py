"""A line stored after a repair, or with an implausible time kept as unknown, is a notice on the
ingest, listed beside the errors but never one of them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.models import Event, IngestJob, IngestNotice, Request, Session
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


def test_a_line_dated_9999_is_stored_with_its_time_unknown_and_dates_nothing(
    tmp_path: Path, viewer_client: Client
) -> None:
    lines = dsh_lines("far-ahead", turns=2)
    lines[3]["time"] = "9999-12-29T00:00:00Z"
    path = write_jsonl(tmp_path / "far-ahead" / "session.jsonl", lines)
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", str(path), stdout=out, stderr=err)

    [notice] = IngestNotice.objects.all()
    assert (notice.line, notice.field) == (4, "time")
    assert "9999-12-29" in notice.reason
    assert "kept as unknown" in notice.reason
    assert f"notice: {path}:4: time:" in err.getvalue()
    session = Session.objects.get(external_id="far-ahead")
    assert session.event_count == len(lines) - 1
    assert Event.objects.get(session=session, seq=2).time is None
    assert session.last_activity.year == 2026
    assert Request.objects.filter(session=session, started_at__year=9999).count() == 0
    for name in ("30d", "all"):
        response = viewer_client.get(reverse("dashboard:overview"), {"range": name})
        assert response.status_code == 200
        assert response.context["window"].end.year == 2026, name


def test_a_test_clock_near_the_epoch_is_one_notice_for_the_whole_log(tmp_path: Path) -> None:
    lines = dsh_lines("test-clock", turns=3)
    for number, line in enumerate(lines[1:]):
        line["time"] = number  # the harness's snapshots count milliseconds from 0
    path = write_jsonl(tmp_path / "test-clock" / "session.jsonl", lines)
    call_command("ingest", str(path), stdout=io.StringIO(), stderr=io.StringIO())

    [notice] = IngestNotice.objects.all()
    assert notice.line == 2
    assert (
        f"before 2000, not an agent's wall clock: kept as unknown ({len(lines) - 1} lines)" in notice.reason
    )
    assert not Event.objects.filter(session__external_id="test-clock", time__isnull=False).exists()


def _cut(tmp_path: Path, session_id: str) -> tuple[Path, str]:
    """A dsh log whose last line was cut mid-write, and the whole text it was cut from."""
    path = write_jsonl(tmp_path / session_id / "session.jsonl", dsh_lines(session_id, turns=2))
    whole = path.read_text()
    path.write_text(whole[: whole.rindex("\n", 0, len(whole) - 1) + 1] + whole.splitlines()[-1][:25])
    return path, whole


def test_a_cut_last_line_is_counted_as_a_notice_in_the_summary_the_json_and_the_job_page(
    tmp_path: Path, viewer_client: Client
) -> None:
    path, _ = _cut(tmp_path, "cut-tail")
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", str(path), stdout=out, stderr=err)
    assert "0 errors, 1 notices" in out.getvalue()
    assert f"notice: {path}: crash tail: line 6: incomplete last line" in err.getvalue()

    # A copy elsewhere is read again (the file itself is now skipped on its stat until it grows).
    copy = tmp_path / "again" / path.name
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    summary = io.StringIO()
    call_command("ingest", str(copy), "--json", stdout=summary)
    answer = json.loads(summary.getvalue())
    assert answer["notices"] == 1
    assert "held back, not stored" in answer["notice_lines"][0]
    job = IngestJob.objects.order_by("pk").last()
    assert job is not None
    assert job.notice_count == 1
    page = viewer_client.get(job.get_absolute_url()).content.decode()
    assert "crash tail" in page
    assert "held back, not stored" in page


def test_a_crash_tail_that_later_completes_clears_its_note(tmp_path: Path, viewer_client: Client) -> None:
    path, whole = _cut(tmp_path, "completes")
    call_command("ingest", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    session = Session.objects.get(external_id="completes")
    assert session.crash_tail.startswith("line 6: incomplete last line")
    assert "Crash tail dropped" in viewer_client.get(session.get_absolute_url()).content.decode()

    path.write_text(whole)
    out = io.StringIO()
    call_command("ingest", str(path), stdout=out, stderr=io.StringIO())

    session.refresh_from_db()
    assert session.crash_tail == ""
    assert session.event_count == 5
    assert "0 errors, 0 notices" in out.getvalue()
    assert "Crash tail dropped" not in viewer_client.get(session.get_absolute_url()).content.decode()
