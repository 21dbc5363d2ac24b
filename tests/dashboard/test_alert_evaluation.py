"""Alert rules judged over eight days of generated Claude Code transcripts: one source's new client
release drops the hit rate from 90 % to 30 % in the last 24 hours while another source stays steady."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from dashboard.alerts.evaluation import alerts_evaluate
from dashboard.alerts.figures import Windows, fleet_figures
from dashboard.costs.pricing import prices_load
from dashboard.models import Alert, AlertRule, RequestAnalysis
from tests.dashboard.alert_fleet import (
    BROKEN_ALPHA,
    DAY,
    END,
    PRICE_READ,
    PRICE_WRITE_5M,
    RECOVERED_ALPHA,
    STEADY_ALPHA,
    STEADY_BETA,
    STEADY_BETA_AFTER,
    eligible_prompt,
    ensure_default_rule,
    plain_hit_rate,
)


@pytest.fixture
def default_rule(db: None) -> AlertRule:
    """The rule the migrations add: hit rate per source and client version."""
    return ensure_default_rule()


def test_the_default_rule_watches_hit_rate_per_source_and_release(default_rule: AlertRule) -> None:
    assert default_rule.metric == AlertRule.Metric.HIT_RATE
    assert default_rule.dimensions == ("source", "client_version")
    assert (default_rule.current_hours, default_rule.baseline_days) == (24, 7)
    assert (default_rule.threshold, default_rule.min_requests) == (Decimal(15), 50)


def test_a_release_that_drops_the_hit_rate_opens_exactly_one_alert(
    default_rule: AlertRule, ingest_plans: Callable[..., None]
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA)

    result = alerts_evaluate(now=END)

    assert [alert.slice_label for alert in result.opened] == ["alpha · claude-code 2.2.0"]
    alert = Alert.objects.get()
    assert (alert.source_name, alert.client_version, alert.status) == ("alpha", "claude-code 2.2.0", "open")
    assert alert.baseline == pytest.approx(0.9, abs=0.02)
    assert alert.current == pytest.approx(0.3, abs=0.02)
    # The new release has no baseline of its own: it is judged against what alpha ran before.
    assert alert.baseline_scope == "alpha, every release and model"
    # The day's cold starts pull the plain figure below the eligible one.
    assert alert.current_plain is not None
    assert alert.current_plain < alert.current
    hand = Decimal(eligible_prompt(BROKEN_ALPHA)) * Decimal("0.6") * (PRICE_WRITE_5M - PRICE_READ) / 1_000_000
    assert float(alert.extra_cost_usd_per_day) == pytest.approx(float(hand), rel=0.15)
    assert alert.current_requests == BROKEN_ALPHA.per_day * (BROKEN_ALPHA.calls - 1)


def test_the_misses_behind_an_alert_are_put_down_to_their_analysed_causes(
    default_rule: AlertRule, ingest_plans: Callable[..., None]
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA)
    labels = set(
        RequestAnalysis.objects.filter(request__client_version="claude-code 2.2.0").values_list(
            "label", flat=True
        )
    )

    alerts_evaluate(now=END)

    causes = Alert.objects.get().top_causes
    assert causes, "the misses have causes"
    assert {item["cause"] for item in causes} <= {label.split(":")[0] for label in labels if label}
    assert sum(item["share"] for item in causes) == pytest.approx(1.0, abs=0.01)


def test_eligible_hit_rate_leaves_out_session_starts(ingest_plans: Callable[..., None], db: None) -> None:
    ingest_plans(STEADY_BETA)
    windows = Windows.ending(END, current_hours=24, baseline_days=7)

    figures = fleet_figures(windows=windows, prices=prices_load()).current[
        ("beta", "claude-code 2.1.0", "claude-sonnet-4-5-20250929")
    ]

    assert figures.requests == STEADY_BETA.per_day * STEADY_BETA.calls
    assert figures.eligible == STEADY_BETA.per_day * (STEADY_BETA.calls - 1)
    assert figures.hit_rate == pytest.approx(0.9, abs=0.001)
    assert figures.plain_hit_rate == pytest.approx(plain_hit_rate(STEADY_BETA), abs=0.001)
    assert figures.plain_hit_rate < figures.hit_rate


def test_a_second_check_keeps_the_one_alert_open(
    default_rule: AlertRule, ingest_plans: Callable[..., None]
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA)
    alerts_evaluate(now=END)

    again = alerts_evaluate(now=END + timedelta(minutes=5))

    assert again.opened == []
    assert len(again.firing) == 1
    assert Alert.objects.count() == 1


def test_a_recovered_release_resolves_its_alert_once(
    default_rule: AlertRule, ingest_plans: Callable[..., None]
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA)
    alerts_evaluate(now=END)
    ingest_plans(RECOVERED_ALPHA, STEADY_BETA_AFTER)

    later = END + DAY
    first = alerts_evaluate(now=later)
    second = alerts_evaluate(now=later + timedelta(minutes=5))

    assert [alert.client_version for alert in first.resolved] == ["claude-code 2.2.0"]
    assert second.resolved == []
    assert second.firing == []
    alert = Alert.objects.get()
    assert (alert.status, alert.resolved_at) == ("resolved", later)


def test_alerts_check_json_lists_the_firing_alert(
    default_rule: AlertRule, ingest_plans: Callable[..., None]
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA)
    out = StringIO()

    call_command("alerts", "check", "--json", "--now", END.isoformat(), stdout=out)

    [item] = json.loads(out.getvalue())
    assert {key: item[key] for key in ("rule", "source", "client_version", "model", "metric", "status")} == {
        "rule": default_rule.name,
        "source": "alpha",
        "client_version": "claude-code 2.2.0",
        "model": None,
        "metric": "hit_rate",
        "status": "firing",
    }
    assert item["baseline"] == pytest.approx(0.9, abs=0.02)
    assert item["current"] == pytest.approx(0.3, abs=0.02)
    assert item["extra_cost_usd_per_day"] > 0
    assert item["top_causes"]
    assert item["url"].endswith(f"/alerts/#alert-{Alert.objects.get().pk}")


def test_a_cause_share_rule_counts_the_requests_with_its_cause(
    ingest_plans: Callable[..., None], db: None
) -> None:
    ingest_plans(STEADY_ALPHA, BROKEN_ALPHA)
    label = (
        RequestAnalysis.objects.filter(request__client_version="claude-code 2.2.0")
        .exclude(label="")
        .values_list("label", flat=True)
        .first()
    )
    assert label, "the broken release's misses are labelled"
    rule = AlertRule.objects.create(
        name="share", metric=AlertRule.Metric.CAUSE_SHARE, cause=label.split("@")[0], slice="source"
    )

    result = alerts_evaluate(now=END, rules=[rule])

    [alert] = result.opened
    assert alert.source_name == "alpha"
    assert alert.client_version == ""
    assert alert.current > alert.baseline + 0.15
