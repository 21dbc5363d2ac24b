"""A session being recorded updates on its own: its live panel polls every 5 s and stops once idle."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import Request, Session, Source
from dashboard.sessions.live import IDLE_AFTER

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
POLL = 'hx-trigger="every 5s"'


def recorded_session(*, idle_for: timedelta) -> Session:
    source, _ = Source.objects.get_or_create(name="laptop")
    session = Session.objects.create(
        source=source,
        external_id="rec-1",
        format="claude-trace",
        request_count=2,
        cache_read_tokens=4096,
        started_at=timezone.now() - idle_for - timedelta(minutes=1),
        last_activity=timezone.now() - idle_for,
    )
    for ordinal, reason in enumerate(["", "system_changed"]):
        Request.objects.create(
            session=session,
            ordinal=ordinal,
            key=f"req_{ordinal}",
            provider="anthropic",
            model="claude-<b>sonnet</b>",
            cache_read_tokens=2048,
            uncached_input_tokens=10,
            provider_miss_reason=reason,
        )
    return session


def test_an_active_sessions_page_carries_a_panel_that_polls_every_five_seconds(viewer_client: Client) -> None:
    session = recorded_session(idle_for=timedelta(seconds=20))
    page = viewer_client.get(session.get_absolute_url()).content.decode()

    assert 'id="session-live"' in page
    assert POLL in page
    assert reverse("dashboard:session_live", args=[session.pk]) in page


def test_an_old_sessions_page_has_no_live_panel(viewer_client: Client) -> None:
    session = recorded_session(idle_for=IDLE_AFTER + timedelta(minutes=1))
    page = viewer_client.get(session.get_absolute_url()).content.decode()

    assert 'id="session-live"' not in page
    assert POLL not in page


def test_the_polled_panel_shows_the_latest_calls_and_keeps_polling(viewer_client: Client) -> None:
    session = recorded_session(idle_for=timedelta(seconds=20))
    answer = viewer_client.get(reverse("dashboard:session_live", args=[session.pk]), headers=HTMX)
    panel = answer.content.decode()

    assert answer.status_code == 200
    assert panel.lstrip().startswith('<section id="session-live"')
    assert POLL in panel
    assert "system_changed" in panel
    assert "claude-&lt;b&gt;sonnet&lt;/b&gt;" in panel
    assert "<b>sonnet" not in panel


def test_the_panel_of_an_idle_session_stops_the_polling(viewer_client: Client) -> None:
    session = recorded_session(idle_for=IDLE_AFTER + timedelta(seconds=1))
    answer = viewer_client.get(reverse("dashboard:session_live", args=[session.pk]), headers=HTMX)

    assert answer.status_code == 286
    assert POLL not in answer.content.decode()
    assert "live updates stopped" in answer.content.decode()


def test_the_panel_needs_a_login(client: Client) -> None:
    session = recorded_session(idle_for=timedelta(seconds=20))
    answer = client.get(reverse("dashboard:session_live", args=[session.pk]), headers=HTMX)

    assert answer.status_code == 302
    assert "rec-1" not in answer.content.decode()


def test_a_session_whose_log_gives_no_time_is_never_live(viewer_client: Client) -> None:
    # A header-only log: its last activity is only when it was stored, a moment ago.
    session = recorded_session(idle_for=timedelta(0))
    Session.objects.filter(pk=session.pk).update(started_at=None)
    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()
    assert POLL not in page
    listing = viewer_client.get(reverse("dashboard:sessions")).content.decode()
    assert 'title="Its log gives no wall-clock time">—<' in listing
