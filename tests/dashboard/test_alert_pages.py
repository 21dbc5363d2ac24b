"""The alerts page and the navigation's badge: open and resolved alerts for viewers; acknowledge and
mute for operators, with CSRF; nothing for anyone signed out."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import Alert
from tests.dashboard.alert_fleet import ensure_default_rule


@pytest.fixture
def open_alert(db: None) -> Alert:
    rule = ensure_default_rule()
    now = timezone.now()
    return Alert.objects.create(
        rule=rule,
        slice_key="source=alpha|client_version=claude-code 2.2.0",
        source_name="alpha",
        client_version="claude-code 2.2.0",
        opened_at=now,
        checked_at=now,
        baseline=0.9,
        current=0.3,
        baseline_plain=0.85,
        current_plain=0.28,
        baseline_requests=378,
        current_requests=54,
        extra_cost_usd_per_day="2.570940",
        top_causes=[{"cause": "unexplained", "share": 1.0, "requests": 54, "tokens": 836838}],
        window={"current_start": (now - timedelta(hours=24)).isoformat(), "end": now.isoformat()},
    )


def test_the_alerts_page_needs_a_login(client: Client, open_alert: Alert) -> None:
    response = client.get(reverse("dashboard:alerts"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_alerts_page_shows_the_open_alert_and_the_badge(viewer_client: Client, open_alert: Alert) -> None:
    response = viewer_client.get(reverse("dashboard:alerts"))

    page = response.content.decode()
    assert response.status_code == 200
    assert "alpha · claude-code 2.2.0" in page
    assert "90.0%" in page
    assert "30.0%" in page
    assert "$2.57" in page
    assert "<code>unexplained</code> 100.0%" in page
    assert 'id="alerts-badge"' in page
    assert 'href="/savings/"' in page
    assert "Acknowledge" not in page  # a viewer reads, an operator acts


def test_no_badge_while_no_alert_is_open(viewer_client: Client, open_alert: Alert) -> None:
    open_alert.status = Alert.Status.RESOLVED
    open_alert.save()

    page = viewer_client.get(reverse("dashboard:sessions")).content.decode()

    assert 'id="alerts-badge"' not in page


def test_an_operator_acknowledges_an_alert(operator_client: Client, open_alert: Alert) -> None:
    response = operator_client.post(reverse("dashboard:alert_acknowledge", args=[open_alert.pk]))

    assert response.status_code == 302
    open_alert.refresh_from_db()
    assert open_alert.acknowledged_by == "operator"
    assert open_alert.acknowledged_at is not None
    assert open_alert.status == Alert.Status.OPEN  # seen, not cleared


def test_an_operator_mutes_an_alert_for_a_period(operator_client: Client, open_alert: Alert) -> None:
    before = timezone.now()

    operator_client.post(reverse("dashboard:alert_mute", args=[open_alert.pk]), {"hours": "24"})

    open_alert.refresh_from_db()
    assert open_alert.muted_until is not None
    assert before + timedelta(hours=24) <= open_alert.muted_until <= timezone.now() + timedelta(hours=24)


def test_a_mute_for_a_period_not_offered_is_refused(operator_client: Client, open_alert: Alert) -> None:
    operator_client.post(reverse("dashboard:alert_mute", args=[open_alert.pk]), {"hours": "100000"})

    open_alert.refresh_from_db()
    assert open_alert.muted_until is None


def test_a_viewer_cannot_acknowledge_or_mute(viewer_client: Client, open_alert: Alert) -> None:
    assert viewer_client.post(reverse("dashboard:alert_acknowledge", args=[open_alert.pk])).status_code == 403
    assert (
        viewer_client.post(reverse("dashboard:alert_mute", args=[open_alert.pk]), {"hours": "1"}).status_code
        == 403
    )
    open_alert.refresh_from_db()
    assert (open_alert.acknowledged_at, open_alert.muted_until) == (None, None)


def test_acknowledging_needs_csrf(make_user: Callable[..., User], open_alert: Alert) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("operator", "operator"))

    assert client.post(reverse("dashboard:alert_acknowledge", args=[open_alert.pk])).status_code == 403
    open_alert.refresh_from_db()
    assert open_alert.acknowledged_at is None
