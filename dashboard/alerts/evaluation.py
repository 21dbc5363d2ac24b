"""Evaluating the rules: open an alert once when a slice's condition starts to hold, keep it open
(with fresh figures) while it holds, resolve it once when it clears, and queue one notification per
destination for each of those two events.

Safe with several evaluators at once (beat overlapping itself, several web processes each running
the in-process runner): an alert is opened under a unique constraint (one open alert per rule and
slice), resolved with a conditional ``UPDATE`` that only one evaluator wins, and its notifications
are unique per event and destination, so nothing is sent twice.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction

from dashboard.alerts.conditions import Condition, slice_conditions
from dashboard.alerts.figures import Windows, fleet_figures
from dashboard.costs.pricing import prices_load
from dashboard.models import Alert, AlertNotification, AlertRule
from dashboard.models.alerts import email_addresses

log = logging.getLogger(__name__)

COST_PLACES = Decimal("0.000001")


@dataclass(slots=True)
class CheckResult:
    """What one evaluation found: the alerts firing now and the ones it resolved."""

    firing: list[Alert] = field(default_factory=list)
    opened: list[Alert] = field(default_factory=list)
    resolved: list[Alert] = field(default_factory=list)


def alerts_evaluate(*, now: datetime, rules: Sequence[AlertRule] | None = None) -> CheckResult:
    """Judge every enabled rule (or ``rules``) at ``now``; open, refresh and resolve alerts and queue
    their notifications. Nothing is sent here (:func:`dashboard.alerts.delivery.notifications_deliver`)."""
    rules = list(AlertRule.objects.filter(enabled=True)) if rules is None else list(rules)
    prices = prices_load()
    result = CheckResult()
    by_windows: dict[tuple[int, int], list[AlertRule]] = defaultdict(list)
    for rule in rules:
        by_windows[(rule.current_hours, rule.baseline_days)].append(rule)
    for (hours, days), group in by_windows.items():
        windows = Windows.ending(now, current_hours=hours, baseline_days=days)
        fleet = fleet_figures(windows=windows, prices=prices)
        for rule in group:
            conditions = slice_conditions(rule=rule, fleet=fleet, prices=prices)
            _judge(rule, conditions, windows, fleet.source_ids, now, result)
    return result


def rule_destinations(rule: AlertRule) -> list[tuple[str, str]]:
    """(channel, target) pairs the rule notifies: its own webhook and addresses, else the settings'."""
    destinations: list[tuple[str, str]] = []
    webhook = rule.webhook_url or settings.CACHESCOPE_ALERT_WEBHOOK
    if webhook:
        destinations.append((AlertNotification.Channel.WEBHOOK, webhook))
    addresses = email_addresses(rule.email_to or settings.CACHESCOPE_ALERT_EMAIL)
    if addresses:
        destinations.append((AlertNotification.Channel.EMAIL, ", ".join(addresses)))
    return destinations


def _judge(
    rule: AlertRule,
    conditions: Sequence[Condition],
    windows: Windows,
    source_ids: dict[str, int],
    now: datetime,
    result: CheckResult,
) -> None:
    holding = {condition.values.key: condition for condition in conditions if condition.holds}
    open_alerts = {
        alert.slice_key: alert for alert in Alert.objects.open().filter(rule=rule).select_related("rule")
    }
    for key, condition in holding.items():
        alert = open_alerts.get(key)
        if alert is None:
            alert = _open(rule, condition, windows, source_ids, now)
            if alert is None:
                continue
            result.opened.append(alert)
        else:
            _refresh(alert, condition, windows, now)
        result.firing.append(alert)
    for key, alert in open_alerts.items():
        if key not in holding and _resolve(alert, now):
            result.resolved.append(alert)


def _fields(condition: Condition, windows: Windows) -> dict[str, object]:
    return {
        "baseline": condition.baseline if condition.baseline is not None else 0.0,
        "current": condition.current if condition.current is not None else 0.0,
        "baseline_plain": condition.baseline_plain,
        "current_plain": condition.current_plain,
        "baseline_requests": condition.baseline_requests,
        "current_requests": condition.current_requests,
        "baseline_scope": condition.baseline_scope,
        "extra_cost_usd_per_day": condition.extra_cost_usd_per_day.quantize(COST_PLACES),
        "top_causes": condition.top_causes,
        "window": windows.as_dict(),
    }


def _open(
    rule: AlertRule, condition: Condition, windows: Windows, source_ids: dict[str, int], now: datetime
) -> Alert | None:
    """Open the slice's alert and queue its notifications; ``None`` when another evaluator just did."""
    values = condition.values
    muted = (
        Alert.objects.filter(rule=rule, slice_key=values.key, muted_until__gt=now)
        .order_by("-muted_until")
        .values_list("muted_until", flat=True)
        .first()
    )
    source_id = source_ids.get(values.source) if values.source is not None else None
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                rule=rule,
                slice_key=values.key,
                source_id=source_id,
                source_name=values.source or "",
                client_version=values.client_version or "",
                model=values.model or "",
                opened_at=now,
                checked_at=now,
                muted_until=muted,
                **_fields(condition, windows),
            )
            _queue(alert, AlertNotification.Event.FIRING, rule_destinations(rule), now)
    except IntegrityError:
        return None  # another evaluator opened it between our read and our write
    log.warning("alert opened: %s %s", rule.name, alert.slice_label)
    return alert


def _refresh(alert: Alert, condition: Condition, windows: Windows, now: datetime) -> None:
    """Keep an open alert's figures those of its latest evaluation; nothing is sent again."""
    fields = {**_fields(condition, windows), "checked_at": now}
    Alert.objects.filter(pk=alert.pk, status=Alert.Status.OPEN).update(**fields)
    for name, value in fields.items():
        setattr(alert, name, value)


def _resolve(alert: Alert, now: datetime) -> bool:
    """Resolve ``alert`` once and queue the resolution to where its firing went; ``False`` when
    another evaluator resolved it first."""
    with transaction.atomic():
        if not Alert.objects.filter(pk=alert.pk, status=Alert.Status.OPEN).update(
            status=Alert.Status.RESOLVED, resolved_at=now
        ):
            return False
        alert.status, alert.resolved_at = Alert.Status.RESOLVED, now
        told = alert.notifications.filter(event=AlertNotification.Event.FIRING).exclude(
            status=AlertNotification.Status.SKIPPED
        )
        _queue(alert, AlertNotification.Event.RESOLVED, list(told.values_list("channel", "target")), now)
    log.warning("alert resolved: %s %s", alert.rule.name, alert.slice_label)
    return True


def _queue(alert: Alert, event: str, destinations: Sequence[tuple[str, str]], now: datetime) -> None:
    status = AlertNotification.Status.SKIPPED if alert.is_muted(now) else AlertNotification.Status.PENDING
    AlertNotification.objects.bulk_create(
        [
            AlertNotification(
                alert=alert, event=event, channel=channel, target=target, status=status, created_at=now
            )
            for channel, target in destinations
        ],
        ignore_conflicts=True,
    )


def alert_acknowledge(*, alert: Alert, by: str, now: datetime) -> bool:
    """Mark an open alert seen; ``False`` when it was already acknowledged or is resolved."""
    done = Alert.objects.filter(pk=alert.pk, status=Alert.Status.OPEN, acknowledged_at__isnull=True).update(
        acknowledged_at=now, acknowledged_by=by
    )
    return bool(done)


def alert_mute(*, alert: Alert, hours: int, now: datetime) -> datetime:
    """Send nothing for the alert's slice for ``hours`` (0 unmutes); the end of the mute."""
    until = now + timedelta(hours=hours)
    Alert.objects.filter(pk=alert.pk).update(muted_until=until if hours else None)
    if hours:
        AlertNotification.objects.filter(alert=alert, status=AlertNotification.Status.PENDING).update(
            status=AlertNotification.Status.SKIPPED
        )
    return until
