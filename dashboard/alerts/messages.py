"""What an alert says: one dict for ``manage.py alerts check --json`` and the webhook's structured
fields, one Slack-compatible ``text`` line, and the e-mail's subject and body.

Links are absolute, from ``CACHESCOPE_BASE_URL``: the sessions and requests lists narrowed to the
slice and the current window, and the savings page (``/savings/``, by path).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from dashboard.models import Alert, AlertRule
from dashboard.web.money import usd
from dashboard.web.percent import percent_text

SAVINGS_PATH = "/savings/"
"""The savings page, linked by path: it is built apart from the alerts."""

METRIC_NAMES = {
    AlertRule.Metric.HIT_RATE: "hit rate",
    AlertRule.Metric.MISS_COST: "cost of misses a day",
    AlertRule.Metric.CAUSE_SHARE: "share of requests",
}


def absolute(path: str) -> str:
    """``path`` on the dashboard's public address."""
    return settings.CACHESCOPE_BASE_URL.rstrip("/") + path


def alert_links(alert: Alert) -> dict[str, str]:
    """The sessions and requests of the alert's slice in its current window, and the savings page."""
    narrowed = {
        name: value
        for name, value in (
            ("source", alert.source_name),
            ("client_version", alert.client_version),
            ("model", alert.model),
        )
        if value
    }
    window = {"since": alert.window.get("current_start", ""), "until": alert.window.get("end", "")}
    window = {name: value for name, value in window.items() if value}
    return {
        "alert": absolute(alert.get_absolute_url()),
        "sessions": absolute(reverse("dashboard:sessions") + "?" + urlencode({**narrowed, **window})),
        "requests": absolute(
            reverse("dashboard:requests") + "?" + urlencode({**narrowed, **window, "sort": "-wasted"})
        ),
        "savings": absolute(SAVINGS_PATH),
    }


def figure_text(rule: AlertRule, value: float | None) -> str:
    """A metric's value as people read it: a share as a percentage, a cost in dollars a day."""
    if value is None:
        return "—"
    if rule.metric == AlertRule.Metric.MISS_COST:
        return usd(value) + "/day"
    return percent_text(value)


def metric_label(rule: AlertRule) -> str:
    name = METRIC_NAMES[AlertRule.Metric(rule.metric)]
    return f"{name} with cause {rule.cause}" if rule.metric == AlertRule.Metric.CAUSE_SHARE else name


def alert_payload(alert: Alert, *, status: str) -> dict[str, Any]:
    """The alert as ``--json`` prints it and the webhook posts it (beside ``text``)."""
    rule = alert.rule
    links = alert_links(alert)
    return {
        "rule": rule.name,
        "status": status,
        "metric": rule.metric,
        "cause": rule.cause or None,
        "source": alert.source_name or None,
        "client_version": alert.client_version or None,
        "model": alert.model or None,
        "baseline": alert.baseline,
        "current": alert.current,
        "baseline_plain": alert.baseline_plain,
        "current_plain": alert.current_plain,
        "baseline_requests": alert.baseline_requests,
        "current_requests": alert.current_requests,
        "baseline_scope": alert.baseline_scope or None,
        "extra_cost_usd_per_day": float(alert.extra_cost_usd_per_day),
        "top_causes": alert.top_causes,
        "opened_at": alert.opened_at.isoformat(),
        "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
        "window": alert.window,
        "url": links["alert"],
        "links": links,
    }


def alert_headline(alert: Alert, *, status: str) -> str:
    """One line: what moved, for which slice, what it costs."""
    rule = alert.rule
    what = f"{metric_label(rule)} of {alert.slice_label}"
    moved = f"{figure_text(rule, alert.baseline)} → {figure_text(rule, alert.current)}"
    if status == "resolved":
        return f"Resolved: {what} is back within the rule ({moved} when it fired)"
    cost = f"; about {usd(alert.extra_cost_usd_per_day)} a day extra" if alert.extra_cost_usd_per_day else ""
    windows = f"last {rule.current_hours} h against the {rule.baseline_days} days before"
    return f"{what} moved {moved} ({windows}){cost}"


def alert_text(alert: Alert, *, status: str) -> str:
    """The Slack-compatible ``text`` line: the headline, the top causes and the link."""
    causes = ", ".join(f"{item['cause']} {percent_text(float(item['share']))}" for item in alert.top_causes)
    parts = [f"[Cachescope {status}] {alert_headline(alert, status=status)}."]
    if causes and status == "firing":
        parts.append(f"Top causes: {causes}.")
    parts.append(alert_links(alert)["alert"])
    return " ".join(parts)


def webhook_body(alert: Alert, *, status: str) -> dict[str, Any]:
    """The JSON a webhook receives: Slack's ``text`` and the structured fields."""
    return {"text": alert_text(alert, status=status), **alert_payload(alert, status=status)}


def email_message(alert: Alert, *, status: str) -> tuple[str, str]:
    """The subject and plain-text body of the alert's e-mail."""
    rule = alert.rule
    subject = f"[Cachescope] {status}: {metric_label(rule)} of {alert.slice_label}"
    links = alert_links(alert)
    lines = [
        alert_headline(alert, status=status) + ".",
        "",
        f"Rule: {rule.name}",
        f"Slice: {alert.slice_label}",
        f"Baseline: {figure_text(rule, alert.baseline)} over {alert.baseline_requests} eligible requests"
        + (f" ({alert.baseline_scope})" if alert.baseline_scope else ""),
        f"Current: {figure_text(rule, alert.current)} over {alert.current_requests} eligible requests",
        f"Plain hit rate: {percent_text(alert.baseline_plain)} → {percent_text(alert.current_plain)}",
        f"Extra cost: {usd(alert.extra_cost_usd_per_day)} a day",
    ]
    if alert.top_causes:
        lines.append("Top causes of the misses:")
        lines.extend(
            f"  {item['cause']}: {percent_text(float(item['share']))} ({item['requests']} requests)"
            for item in alert.top_causes
        )
    lines += [
        "",
        f"Alert: {links['alert']}",
        f"Sessions: {links['sessions']}",
        f"Savings: {links['savings']}",
    ]
    return subject, "\n".join(lines) + "\n"
