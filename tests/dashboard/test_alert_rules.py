"""Alert rules from the rules page and ``manage.py alerts``: a good rule is saved, a bad one is an
error naming its field, and nothing is saved."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from dashboard.models import AlertRule

GOOD = {
    "name": "Miss cost per model",
    "metric": "miss_cost",
    "cause": "",
    "slice": "model",
    "current_hours": "24",
    "baseline_days": "7",
    "threshold": "5",
    "min_requests": "50",
    "webhook_url": "https://hooks.example.com/cachescope",
    "email_to": "ops@example.com",
    "enabled": "on",
}


@pytest.fixture
def admin_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("root", "admin"))
    return client


def test_an_admin_adds_a_rule_on_the_rules_page(admin_client: Client) -> None:
    response = admin_client.post(reverse("dashboard:alert_rules"), GOOD)

    assert response.status_code == 302
    rule = AlertRule.objects.get(name=GOOD["name"])
    assert (rule.metric, rule.dimensions, rule.webhook_url) == ("miss_cost", ("model",), GOOD["webhook_url"])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("slice", "source,team", "unknown slice team"),
        ("metric", "latency", "Select a valid choice. latency is not one of the available choices."),
        (
            "webhook_url",
            "ftp://hooks.example.com/x",
            "is not http(s): it must start with http:// or https://",
        ),
        ("webhook_url", "javascript:alert(1)", "is not http(s)"),
        ("email_to", "ops@example.com, nobody", "&#x27;nobody&#x27; is not an e-mail address"),
    ],
)
def test_a_bad_rule_on_the_rules_page_is_refused_and_nothing_is_saved(
    admin_client: Client, field: str, value: str, message: str
) -> None:
    before = AlertRule.objects.count()

    response = admin_client.post(reverse("dashboard:alert_rules"), {**GOOD, field: value})

    assert response.status_code == 400
    assert message in response.content.decode()
    assert AlertRule.objects.count() == before


def test_a_cause_share_rule_needs_a_known_cause(admin_client: Client) -> None:
    response = admin_client.post(
        reverse("dashboard:alert_rules"), {**GOOD, "metric": "cause_share", "cause": "solar-flare"}
    )

    assert response.status_code == 400
    assert "unknown cause &#x27;solar-flare&#x27;" in response.content.decode()
    assert not AlertRule.objects.filter(name=GOOD["name"]).exists()


def test_only_admins_manage_rules(operator_client: Client) -> None:
    assert operator_client.get(reverse("dashboard:alert_rules")).status_code == 403
    assert operator_client.post(reverse("dashboard:alert_rules"), GOOD).status_code == 403
    assert not AlertRule.objects.filter(name=GOOD["name"]).exists()


def test_the_rules_page_needs_csrf(make_user: Callable[..., User]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("root", "admin"))

    assert client.post(reverse("dashboard:alert_rules"), GOOD).status_code == 403
    assert not AlertRule.objects.filter(name=GOOD["name"]).exists()


def test_alerts_add_saves_a_rule(db: None) -> None:
    out = StringIO()

    call_command(
        "alerts", "add", "per model", "--slice", "source,model", "--threshold", "20", "--webhook",
        "http://127.0.0.1:9/hook", stdout=out,
    )  # fmt: skip

    rule = AlertRule.objects.get(name="per model")
    assert (rule.dimensions, float(rule.threshold), rule.webhook_url) == (
        ("source", "model"),
        20.0,
        "http://127.0.0.1:9/hook",
    )
    assert out.getvalue() == "Rule per model added.\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--slice", "source,team"], "--slice: unknown slice team"),
        (["--slice", "source,source"], "--slice: the slice 'source,source' names a dimension twice"),
        (
            ["--metric", "latency"],
            "--metric: unknown metric 'latency': use one of hit_rate, miss_cost, cause_share",
        ),
        (
            ["--webhook", "file:///etc/passwd"],
            "--webhook: the webhook URL 'file:///etc/passwd' is not http(s)",
        ),
        (["--email", "not-an-address"], "--email: 'not-an-address' is not an e-mail address"),
        (["--threshold", "lots"], "--threshold: 'lots' is not a number"),
        (["--metric", "cause_share"], "--cause: a cause-share rule needs a cause"),
    ],
)
def test_alerts_add_refuses_a_bad_rule_and_saves_nothing(
    db: None, arguments: list[str], message: str
) -> None:
    before = AlertRule.objects.count()

    with pytest.raises(CommandError) as refused:
        call_command("alerts", "add", "bad", *arguments)

    assert message in str(refused.value)
    assert AlertRule.objects.count() == before


def test_alerts_rules_lists_the_default_rule(db: None) -> None:
    out = StringIO()

    call_command("alerts", "rules", stdout=out)

    assert out.getvalue() == (
        "Hit rate per source and client version: hit_rate by source,client_version, last 24 h vs 7 days "
        "before, threshold 15, ≥50 requests\n"
    )


def test_alerts_remove_deletes_a_rule_by_name(db: None, capsys: Any) -> None:
    call_command("alerts", "remove", "Hit rate per source and client version")

    assert not AlertRule.objects.exists()
    with pytest.raises(CommandError, match="no rule is named 'gone'"):
        call_command("alerts", "remove", "gone")
