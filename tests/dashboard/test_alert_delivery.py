"""Alert notifications: one webhook POST per alert event to a real local receiver, retried with a
backoff on 5xx and unreachable hosts, never sent twice, never in an ingest; e-mail through Django's
mail backend (locmem in tests). The fleet is ingested without its analyses here: what is sent does
not depend on them (test_alert_evaluation.py covers the causes)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.core.management import call_command

from dashboard.alerts.runner import alerts_check
from dashboard.models import AlertNotification, AlertRule, Session
from tests.dashboard.alert_fleet import (
    BROKEN_ALPHA,
    DAY,
    END,
    RECOVERED_ALPHA,
    STEADY_ALPHA,
    STEADY_BETA,
    STEADY_BETA_AFTER,
    ensure_default_rule,
)
from tests.dashboard.webhook_receiver import WebhookReceiver, unreachable_url


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _quick_backoff(settings: Any) -> None:
    settings.CACHESCOPE_ALERT_WEBHOOK_BACKOFF_SECONDS = 0.05
    settings.CACHESCOPE_ALERT_WEBHOOK_TIMEOUT_SECONDS = 2


@pytest.fixture
def rule(db: None) -> AlertRule:
    return ensure_default_rule()


def test_the_webhook_gets_one_post_naming_the_release_and_a_second_check_sends_nothing(
    rule: AlertRule, receiver: WebhookReceiver, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    settings.CACHESCOPE_ALERT_WEBHOOK = receiver.url
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)

    alerts_check(now=END)
    alerts_check(now=END + timedelta(minutes=5))

    [post] = receiver.posts
    assert post["status"] == "firing"
    assert post["client_version"] == "claude-code 2.2.0"
    assert post["source"] == "alpha"
    assert "claude-code 2.2.0" in post["text"]
    assert "90.0% → 30.0%" in post["text"]
    assert post["links"]["savings"].endswith("/savings/")
    assert post["extra_cost_usd_per_day"] > 0


def test_a_recovered_release_sends_its_resolution_once(
    rule: AlertRule, receiver: WebhookReceiver, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    settings.CACHESCOPE_ALERT_WEBHOOK = receiver.url
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)
    alerts_check(now=END)
    ingest_plans(RECOVERED_ALPHA, STEADY_BETA_AFTER, analyse=False)

    alerts_check(now=END + DAY)
    alerts_check(now=END + DAY + timedelta(minutes=5))

    assert [post["status"] for post in receiver.posts] == ["firing", "resolved"]
    assert receiver.posts[1]["text"].startswith("[Cachescope resolved]")


def test_a_webhook_answering_503_is_tried_again_until_it_takes_the_alert(
    rule: AlertRule, settings: Any, ingest_plans: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    flaky = WebhookReceiver(statuses=[503, 503])
    settings.CACHESCOPE_ALERT_WEBHOOK = flaky.url
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)
    try:
        with caplog.at_level(logging.WARNING, logger="dashboard.alerts.delivery"):
            _, delivery = alerts_check(now=END)
    finally:
        flaky.close()

    assert flaky.answered == [503, 503, 200]
    assert len(flaky.posts) == 1
    assert delivery.sent == 1
    notification = AlertNotification.objects.get()
    assert (notification.status, notification.attempts) == ("sent", 3)
    assert sum("HTTP 503" in record.getMessage() for record in caplog.records) == 2


def test_an_unreachable_webhook_is_retried_and_logged_and_ingest_goes_on(
    rule: AlertRule, settings: Any, ingest_plans: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    settings.CACHESCOPE_ALERT_WEBHOOK = unreachable_url()
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)

    with caplog.at_level(logging.WARNING, logger="dashboard.alerts.delivery"):
        _, delivery = alerts_check(now=END)
    sessions = Session.objects.count()
    ingest_plans(RECOVERED_ALPHA, analyse=False)

    assert delivery.waiting == 1
    notification = AlertNotification.objects.get()
    assert notification.status == "pending"
    assert notification.attempts == settings.CACHESCOPE_ALERT_WEBHOOK_TRIES
    assert "did not answer" in notification.last_error
    tries = [record for record in caplog.records if "try" in record.getMessage()]
    assert len(tries) == settings.CACHESCOPE_ALERT_WEBHOOK_TRIES
    # The ingest stored its sessions and left the waiting notification alone.
    assert Session.objects.count() == sessions + RECOVERED_ALPHA.per_day
    notification.refresh_from_db()
    assert notification.attempts == settings.CACHESCOPE_ALERT_WEBHOOK_TRIES


def test_a_notification_still_unsent_after_its_hours_is_given_up(
    rule: AlertRule, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    settings.CACHESCOPE_ALERT_WEBHOOK = unreachable_url()
    settings.CACHESCOPE_ALERT_WEBHOOK_TRIES = 1
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)
    alerts_check(now=END)

    later = END + timedelta(hours=settings.CACHESCOPE_ALERT_DELIVERY_HOURS, minutes=5)
    _, delivery = alerts_check(now=later)

    assert delivery.failed == 1
    assert AlertNotification.objects.get(event="firing").status == "failed"


def test_a_webhook_refusing_with_4xx_is_not_tried_again(
    rule: AlertRule, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    refusing = WebhookReceiver(statuses=[404])
    settings.CACHESCOPE_ALERT_WEBHOOK = refusing.url
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)
    try:
        alerts_check(now=END)
    finally:
        refusing.close()

    assert refusing.answered == [404]
    notification = AlertNotification.objects.get()
    assert (notification.status, notification.last_error) == ("failed", f"HTTP 404 from {refusing.url}")


def test_alerts_go_by_email_once_a_condition(
    rule: AlertRule, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    settings.CACHESCOPE_ALERT_EMAIL = "ops@example.com, oncall@example.com"
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)

    call_command("alerts", "check", "--now", END.isoformat())
    call_command("alerts", "check", "--now", (END + timedelta(minutes=5)).isoformat())

    [message] = mail.outbox
    assert message.to == ["ops@example.com", "oncall@example.com"]
    assert "firing" in message.subject
    assert "claude-code 2.2.0" in message.subject
    assert "Extra cost: $" in message.body
    assert "/savings/" in message.body


def test_a_muted_alert_sends_nothing(
    rule: AlertRule, receiver: WebhookReceiver, settings: Any, ingest_plans: Callable[..., None]
) -> None:
    from dashboard.alerts.evaluation import alert_mute, alerts_evaluate
    from dashboard.models import Alert

    settings.CACHESCOPE_ALERT_WEBHOOK = receiver.url
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA, analyse=False)
    [alert] = alerts_evaluate(now=END).opened
    alert_mute(alert=alert, hours=4, now=END)

    alerts_check(now=END + timedelta(minutes=5))

    assert receiver.posts == []
    assert AlertNotification.objects.get().status == "skipped"
    assert Alert.objects.get().muted_until == END + timedelta(hours=4)
