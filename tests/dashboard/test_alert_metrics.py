"""``GET /metrics``: the fleet's figures in Prometheus's exposition format, for a scraper with the token."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tests.dashboard.alert_fleet import BROKEN_ALPHA, STEADY_BETA, Plan, plain_hit_rate

TOKEN = "scrape-secret-0123456789"


@pytest.fixture
def scraping(settings: Any) -> None:
    settings.CACHESCOPE_METRICS_TOKEN = TOKEN


def _samples(body: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def test_metrics_without_the_token_are_refused(client: Client, scraping: None, db: None) -> None:
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_metrics_are_off_without_a_token_setting(client: Client, db: None) -> None:
    response = client.get("/metrics", headers={"Authorization": "Bearer "})

    assert response.status_code == 401
    assert b"set CACHESCOPE_METRICS_TOKEN" in response.content


def test_metrics_give_tokens_and_hit_rate_by_source_release_and_model(
    client: Client, scraping: None, ingest_plans: Callable[..., None], db: None
) -> None:
    recent = Plan("gamma", "2.3.0", 0.8, timezone.now() - timedelta(hours=23), days=1, per_day=3, calls=19)
    ingest_plans(STEADY_BETA, BROKEN_ALPHA, recent)  # the miss cost comes from the analyses

    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = _samples(response.content.decode())
    beta = (
        ("client_version", "claude-code 2.1.0"),
        ("model", "claude-sonnet-4-5-20250929"),
        ("source", "beta"),
    )
    alpha = (
        ("client_version", "claude-code 2.2.0"),
        ("model", "claude-sonnet-4-5-20250929"),
        ("source", "alpha"),
    )
    assert (
        samples[("cachescope_requests_total", beta)]
        == STEADY_BETA.days * STEADY_BETA.per_day * STEADY_BETA.calls
    )
    assert samples[("cachescope_cache_read_tokens_total", alpha)] > 0
    assert (
        samples[("cachescope_uncached_input_tokens_total", alpha)]
        == 3 * BROKEN_ALPHA.per_day * BROKEN_ALPHA.calls
    )
    assert samples[("cachescope_miss_cost_usd_total", alpha)] > 0
    assert samples[("cachescope_alerts_open", ())] == 0
    # Only gamma's requests fall in the last 24 hours.
    gamma = (
        ("client_version", "claude-code 2.3.0"),
        ("model", "claude-sonnet-4-5-20250929"),
        ("source", "gamma"),
    )
    rates = {labels: value for (name, labels), value in samples.items() if name == "cachescope_hit_rate"}
    assert rates == {gamma: pytest.approx(plain_hit_rate(recent), abs=1e-9)}
