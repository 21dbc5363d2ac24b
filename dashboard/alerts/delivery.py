"""Sending queued notifications: a JSON POST to a webhook, an e-mail through Django's mail settings.

A notification is claimed with a conditional ``UPDATE`` before it is sent, so two evaluators never
both send it; a claim whose sender died lapses and the next pass sends it. A webhook that answers
5xx, times out or cannot be reached is tried again with a doubling pause, up to
``CACHESCOPE_ALERT_WEBHOOK_TRIES`` times a pass; still failing, the notification waits for the next
pass, until it is older than ``CACHESCOPE_ALERT_DELIVERY_HOURS``, when it is given up as failed.
Every failure is logged. A 4xx answer is not retried: the request itself is wrong.

This runs in the Celery task or the in-process runner, never in an ingest: a slow receiver holds
up nothing but the next notification.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Q

from dashboard.alerts.messages import email_message, webhook_body
from dashboard.models import AlertNotification
from dashboard.models.alerts import email_addresses

log = logging.getLogger(__name__)

CLAIM = timedelta(minutes=5)
"""How long a sender holds a notification before another pass may take it over."""
USER_AGENT = "Cachescope-Alerts/1"


class DeliveryError(Exception):
    """A notification could not be sent; ``transient`` when trying again may help."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    sent: int = 0
    failed: int = 0
    waiting: int = 0


def notifications_deliver(*, now: datetime) -> DeliveryResult:
    """Send every notification that is due; how many were sent, given up and left for a later pass."""
    due = AlertNotification.objects.filter(
        Q(status=AlertNotification.Status.PENDING)
        | Q(status=AlertNotification.Status.SENDING, claimed_until__lt=now)
    ).values_list("pk", flat=True)
    sent = failed = waiting = 0
    for pk in list(due):
        outcome = notification_send(notification_id=pk, now=now)
        if outcome == AlertNotification.Status.SENT:
            sent += 1
        elif outcome == AlertNotification.Status.FAILED:
            failed += 1
        elif outcome == AlertNotification.Status.PENDING:
            waiting += 1
    return DeliveryResult(sent, failed, waiting)


def notification_send(*, notification_id: int, now: datetime) -> str | None:
    """Claim and send one notification; its status after, or ``None`` when another sender has it."""
    claimable = Q(status=AlertNotification.Status.PENDING) | Q(
        status=AlertNotification.Status.SENDING, claimed_until__lt=now
    )
    claimed = AlertNotification.objects.filter(claimable, pk=notification_id).update(
        status=AlertNotification.Status.SENDING, claimed_until=now + CLAIM
    )
    if not claimed:
        return None
    notification = AlertNotification.objects.select_related("alert__rule").get(pk=notification_id)
    tries = 0
    try:
        if notification.channel == AlertNotification.Channel.WEBHOOK:
            tries = _webhook_post(notification)
        else:
            tries = 1
            _email_send(notification)
    except DeliveryError as error:
        return _failed(notification, error, now)
    AlertNotification.objects.filter(pk=notification_id).update(
        status=AlertNotification.Status.SENT,
        sent_at=now,
        attempts=notification.attempts + tries,
        last_error="",
    )
    return AlertNotification.Status.SENT


def _failed(notification: AlertNotification, error: DeliveryError, now: datetime) -> str:
    attempts = notification.attempts + (settings.CACHESCOPE_ALERT_WEBHOOK_TRIES if error.transient else 1)
    expired = now - notification.created_at > timedelta(hours=settings.CACHESCOPE_ALERT_DELIVERY_HOURS)
    status = (
        AlertNotification.Status.PENDING
        if error.transient and not expired
        else AlertNotification.Status.FAILED
    )
    AlertNotification.objects.filter(pk=notification.pk).update(
        status=status, attempts=attempts, last_error=str(error)[:2000], claimed_until=None
    )
    if status == AlertNotification.Status.FAILED:
        log.error("alert notification %s to %s given up: %s", notification.pk, notification.target, error)
    else:
        log.warning(
            "alert notification %s to %s not sent, tried again next pass: %s",
            notification.pk,
            notification.target,
            error,
        )
    return status


def _webhook_post(notification: AlertNotification) -> int:
    """POST the alert's JSON, trying again on 5xx and network errors; the number of tries it took."""
    body = json.dumps(webhook_body(notification.alert, status=notification.event)).encode()
    tries = settings.CACHESCOPE_ALERT_WEBHOOK_TRIES
    pause = settings.CACHESCOPE_ALERT_WEBHOOK_BACKOFF_SECONDS
    for attempt in range(1, tries + 1):
        try:
            _post_once(notification.target, body)
            return attempt
        except DeliveryError as error:
            log.warning("alert webhook %s, try %d of %d: %s", notification.target, attempt, tries, error)
            if not error.transient or attempt == tries:
                raise
            time.sleep(pause * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _post_once(url: str, body: bytes) -> None:
    request = urllib.request.Request(  # noqa: S310 - the URL was validated as http(s) when saved
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.CACHESCOPE_ALERT_WEBHOOK_TIMEOUT_SECONDS):  # noqa: S310
            return
    except urllib.error.HTTPError as error:
        raise DeliveryError(f"HTTP {error.code} from {url}", transient=error.code >= 500) from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise DeliveryError(f"{url} did not answer: {reason}", transient=True) from None


def _email_send(notification: AlertNotification) -> None:
    subject, body = email_message(notification.alert, status=notification.event)
    try:
        send_mail(subject, body, None, email_addresses(notification.target), fail_silently=False)
    except (OSError, ConnectionError) as error:
        raise DeliveryError(f"mail to {notification.target} failed: {error}", transient=True) from None
