from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.ingest.files import ingest_paths
from dashboard.models import IngestJob, Request, Session, Source
from tests.dashboard.logs import dsh_lines, write_jsonl

pytestmark = pytest.mark.django_db

PAGES = [
    "dashboard:overview",
    "dashboard:sessions",
    "dashboard:requests",
    "dashboard:warnings",
    "dashboard:ingest",
]


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_users_are_sent_to_the_login_page(client: Client, name: str) -> None:
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", PAGES)
def test_every_page_renders_for_a_viewer(viewer_client: Client, name: str) -> None:
    response = viewer_client.get(reverse(name))
    assert response.status_code == 200
    assert b'hx-headers=\'{"X-CSRFToken"' in response.content


def test_the_login_page_is_open_and_carries_a_csrf_token(client: Client) -> None:
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content


def _ingest(tmp_path: Path, *names: str) -> None:
    for name in names:
        write_jsonl(tmp_path / name / "session.jsonl", dsh_lines(name, turns=2))
    ingest_paths(paths=[tmp_path], source_name="build-farm")


def test_sessions_list_filters_by_text(viewer_client: Client, tmp_path: Path) -> None:
    _ingest(tmp_path, "alpha-run", "beta-run")
    response = viewer_client.get(reverse("dashboard:sessions"), {"q": "alpha"})
    assert b"alpha-run" in response.content
    assert b"beta-run" not in response.content


def test_sessions_list_answers_htmx_with_the_table_alone(viewer_client: Client, tmp_path: Path) -> None:
    _ingest(tmp_path, "alpha-run")
    full = viewer_client.get(reverse("dashboard:sessions"))
    partial = viewer_client.get(reverse("dashboard:sessions"), headers={"HX-Request": "true"})
    assert b"<html" in full.content
    assert b"<html" not in partial.content
    assert partial.content.lstrip().startswith(b'<section id="session-table"')
    assert b"alpha-run" in partial.content
    assert "HX-Request" in partial["Vary"]


def test_sessions_list_sorts_by_a_known_column_and_ignores_an_unknown_one(
    viewer_client: Client, tmp_path: Path
) -> None:
    _ingest(tmp_path, "alpha-run", "beta-run")
    Session.objects.filter(external_id="alpha-run").update(request_count=9)
    ascending = viewer_client.get(reverse("dashboard:sessions"), {"sort": "requests"}).content
    descending = viewer_client.get(reverse("dashboard:sessions"), {"sort": "-requests"}).content
    assert ascending.index(b"beta-run") < ascending.index(b"alpha-run")
    assert descending.index(b"alpha-run") < descending.index(b"beta-run")
    assert viewer_client.get(reverse("dashboard:sessions"), {"sort": "password"}).status_code == 200


def test_session_page_shows_figures_and_pages_the_timeline(viewer_client: Client, tmp_path: Path) -> None:
    _ingest(tmp_path, "alpha-run")
    session = Session.objects.get(external_id="alpha-run")
    page = viewer_client.get(session.get_absolute_url())
    assert page.status_code == 200
    assert b"Conversation" in page.content
    assert b"question 2" in page.content
    timeline = viewer_client.get(
        reverse("dashboard:session_events", args=[session.pk]),
        {"type": "user/message"},
        headers={"HX-Request": "true"},
    )
    assert timeline.content.lstrip().startswith(b'<section id="event-timeline"')
    assert b"question 1" in timeline.content
    assert b"answer 1" not in timeline.content


def test_prompt_content_is_escaped_on_the_session_page(viewer_client: Client, tmp_path: Path) -> None:
    lines = dsh_lines("xss", turns=1)
    lines[2]["data"]["content"] = '<script>alert("x")</script> <a href="javascript:alert(1)">x</a>'
    write_jsonl(tmp_path / "xss" / "session.jsonl", lines)
    ingest_paths(paths=[tmp_path], source_name="build-farm")
    page = viewer_client.get(Session.objects.get(external_id="xss").get_absolute_url())
    assert b"<script>alert" not in page.content
    assert b"&lt;script&gt;alert" in page.content
    assert b'href="javascript:' not in page.content


def test_overview_counts_sessions_per_source(viewer_client: Client, tmp_path: Path) -> None:
    _ingest(tmp_path, "alpha-run", "beta-run")
    response = viewer_client.get(reverse("dashboard:overview"), {"range": "all"})
    [(row, _)] = response.context["sources"]
    assert (row.source.name, row.sessions) == ("build-farm", 2)
    assert Source.objects.count() == 1


def test_the_session_page_pages_a_long_requests_table(viewer_client: Client, tmp_path: Path) -> None:
    _ingest(tmp_path, "long-run")
    session = Session.objects.get(external_id="long-run")
    Request.objects.bulk_create(
        Request(session=session, ordinal=i, key=f"extra-{i}", provider="anthropic", model="m")
        for i in range(2, 252)
    )
    first = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "Requests 1 to 25 of 252" in first
    assert 'href="?requests_page=2#requests"' in first
    second = viewer_client.get(session.get_absolute_url(), {"requests_page": 11}).content.decode()
    assert "Requests 251 to 252 of 252" in second
    assert f'href="/requests/{Request.objects.get(session=session, ordinal=251).pk}/"' in second


def test_the_job_page_shows_repeated_events_and_repeated_requests_apart(viewer_client: Client) -> None:
    job = IngestJob.objects.create(status="done", duplicates=7, duplicate_events=5, duplicate_requests=2)
    text = viewer_client.get(job.get_absolute_url()).content.decode()
    assert "<dt>Duplicate events skipped</dt><dd>5</dd>" in text
    assert "<dt>Duplicate requests skipped</dt><dd>2</dd>" in text
    assert "Duplicates skipped" not in text


def test_a_job_recorded_before_duplicates_were_counted_apart_shows_their_total(viewer_client: Client) -> None:
    job = IngestJob.objects.create(
        status="done", duplicates=7, duplicate_events=None, duplicate_requests=None
    )
    text = viewer_client.get(job.get_absolute_url()).content.decode()
    assert "<dt>Duplicates skipped</dt><dd>7</dd>" in text
    assert "Duplicate events" not in text
