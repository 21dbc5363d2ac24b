"""A list or progress page answers htmx (``request.htmx``) with its fragment, and a browser with the page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.models import IngestJob

HTMX = {"HX-Request": "true"}


@pytest.mark.parametrize(
    ("page", "fragment"), [("dashboard:requests", "request-table"), ("dashboard:warnings", "warning-table")]
)
def test_a_list_answers_htmx_with_its_table_alone(viewer_client: Client, page: str, fragment: str) -> None:
    full = viewer_client.get(reverse(page))
    partial = viewer_client.get(reverse(page), headers=HTMX)
    assert b"<html" in full.content
    assert b"<html" not in partial.content
    assert partial.content.lstrip().startswith(f'<section id="{fragment}"'.encode())
    assert "HX-Request" in partial["Vary"]


def test_a_running_jobs_progress_is_polled_as_a_fragment(viewer_client: Client) -> None:
    job = IngestJob.objects.create(status=IngestJob.Status.RUNNING, bytes_total=200, bytes_done=50)
    partial = viewer_client.get(reverse("dashboard:ingest_job", args=[job.pk]), headers=HTMX)
    assert partial.status_code == 200
    assert partial.content.lstrip().startswith(b'<section id="job-progress"')
    assert b"<html" in viewer_client.get(reverse("dashboard:ingest_job", args=[job.pk])).content


def test_a_finished_jobs_progress_tells_htmx_to_stop_polling(viewer_client: Client) -> None:
    job = IngestJob.objects.create(status=IngestJob.Status.DONE)
    partial = viewer_client.get(reverse("dashboard:ingest_job", args=[job.pk]), headers=HTMX)
    assert partial.status_code == 286
    assert b'hx-trigger="every 1s"' not in partial.content
