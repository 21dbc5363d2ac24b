"""``manage.py alerts``: the alert rules and their checks from the command line.

- ``alerts check [--json]``: evaluate every enabled rule now and send what is due; ``--json`` prints
  the alerts firing now and those this check resolved.
- ``alerts rules [--json]``: list the rules.
- ``alerts add NAME [--metric M] [--slice S] [--cause C] [--current-hours H] [--baseline-days D]
  [--threshold T] [--min-requests N] [--webhook URL] [--email ADDRESSES] [--disabled]``: add a rule;
  a wrong field is an error naming it, and nothing is saved.
- ``alerts remove NAME``: delete a rule and its alerts.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from dashboard.alerts.evaluation import rule_destinations
from dashboard.alerts.messages import alert_headline, alert_payload
from dashboard.alerts.runner import alerts_check
from dashboard.models import AlertRule


class Command(BaseCommand):
    help = "Alert rules and their checks: check, rules, add, remove."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="{check,rules,add,remove}")
        check = verbs.add_parser("check", help="Evaluate every enabled rule now and send what is due.")
        check.add_argument("--json", action="store_true", help="Print the alerts as JSON.")
        check.add_argument("--now", help="Evaluate as of this ISO time instead of now.")
        rules = verbs.add_parser("rules", help="List the rules.")
        rules.add_argument("--json", action="store_true")
        add = verbs.add_parser("add", help="Add a rule.")
        add.add_argument("name")
        add.add_argument(
            "--metric", default=AlertRule.Metric.HIT_RATE, help="hit_rate, miss_cost or cause_share."
        )
        add.add_argument(
            "--slice", default="source,client_version", help="'all' or source,client_version,model."
        )
        add.add_argument("--cause", default="", help="The cause a cause_share rule counts.")
        add.add_argument("--current-hours", type=int, default=24)
        add.add_argument("--baseline-days", type=int, default=7)
        add.add_argument("--threshold", default="15", help="Points (hit rate, cause share) or USD a day.")
        add.add_argument("--min-requests", type=int, default=50)
        add.add_argument("--webhook", default="", help="An http(s) URL; empty: CACHESCOPE_ALERT_WEBHOOK.")
        add.add_argument(
            "--email", default="", help="Comma-separated addresses; empty: CACHESCOPE_ALERT_EMAIL."
        )
        add.add_argument("--disabled", action="store_true")
        remove = verbs.add_parser("remove", help="Delete a rule and its alerts.")
        remove.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['verb']}")(options)

    def _check(self, options: dict[str, Any]) -> None:
        result, delivery = alerts_check(now=_moment(options["now"]))
        items = [("firing", alert) for alert in result.firing] + [
            ("resolved", alert) for alert in result.resolved
        ]
        if options["json"]:
            self.stdout.write(
                json.dumps([alert_payload(alert, status=status) for status, alert in items], indent=2)
            )
            return
        for status, alert in items:
            self.stdout.write(f"{status}: {alert_headline(alert, status=status)}")
        self.stdout.write(
            f"{len(result.firing)} firing ({len(result.opened)} new), {len(result.resolved)} resolved; "
            f"{delivery.sent} notifications sent, {delivery.waiting} to try again, {delivery.failed} given up"
        )

    def _rules(self, options: dict[str, Any]) -> None:
        rules = list(AlertRule.objects.all())
        if options["json"]:
            rows = [
                {
                    "name": rule.name,
                    "metric": rule.metric,
                    "cause": rule.cause or None,
                    "slice": rule.slice,
                    "current_hours": rule.current_hours,
                    "baseline_days": rule.baseline_days,
                    "threshold": float(rule.threshold),
                    "min_requests": rule.min_requests,
                    "enabled": rule.enabled,
                    "destinations": [{"channel": c, "target": t} for c, t in rule_destinations(rule)],
                }
                for rule in rules
            ]
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for rule in rules:
            state = "" if rule.enabled else " (off)"
            self.stdout.write(
                f"{rule.name}{state}: {rule.metric} by {rule.slice}, last {rule.current_hours} h vs "
                f"{rule.baseline_days} days before, threshold {rule.threshold.normalize():f}, "
                f"≥{rule.min_requests} requests"
            )

    def _add(self, options: dict[str, Any]) -> None:
        if options["metric"] not in AlertRule.Metric.values:
            known = ", ".join(AlertRule.Metric.values)
            raise CommandError(f"--metric: unknown metric {options['metric']!r}: use one of {known}")
        try:
            threshold = Decimal(options["threshold"])
        except InvalidOperation:
            raise CommandError(f"--threshold: {options['threshold']!r} is not a number") from None
        rule = AlertRule(
            name=options["name"],
            metric=options["metric"],
            cause=options["cause"],
            slice=options["slice"],
            current_hours=options["current_hours"],
            baseline_days=options["baseline_days"],
            threshold=threshold,
            min_requests=options["min_requests"],
            webhook_url=options["webhook"],
            email_to=options["email"],
            enabled=not options["disabled"],
        )
        try:
            rule.full_clean()
        except ValidationError as error:
            raise CommandError(_errors_text(error)) from None
        rule.save()
        self.stdout.write(f"Rule {rule.name} added.")

    def _remove(self, options: dict[str, Any]) -> None:
        deleted, _ = AlertRule.objects.filter(name=options["name"]).delete()
        if not deleted:
            raise CommandError(f"no rule is named {options['name']!r}")
        self.stdout.write(f"Rule {options['name']} removed.")


_OPTION_OF = {"webhook_url": "--webhook", "email_to": "--email", "name": "NAME"}


def _errors_text(error: ValidationError) -> str:
    """Each wrong field as the option that set it, with Django's message."""
    if not hasattr(error, "error_dict"):
        return "; ".join(error.messages)
    return "; ".join(
        f"{_OPTION_OF.get(field, '--' + field.replace('_', '-'))}: {' '.join(messages)}"
        for field, messages in error.message_dict.items()
    )


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    moment = parse_datetime(text)
    if moment is None or moment.tzinfo is None:
        raise CommandError(f"--now: {text!r} is not an ISO time with a zone (e.g. 2026-01-31T09:00Z)")
    return moment
