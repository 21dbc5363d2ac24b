"""``GET /metrics``: the fleet's cache figures in Prometheus's exposition format, behind a scrape
token, so fleets that alert with Prometheus, Alertmanager or Grafana use their own stack.

By source, client version and model: requests and tokens by bucket as counters since the first
stored request (from the daily usage rollups), the miss cost and the re-processed tokens as counters
(from the analysis rows), and the hit rate over the last 24 hours as a gauge (from the hourly
rollups). Prometheus takes rates of the counters itself. The text is kept in the cache for
``CACHESCOPE_METRICS_CACHE_SECONDS``, so a scrape every few seconds costs the database nothing more.

The scraper sends ``Authorization: Bearer <CACHESCOPE_METRICS_TOKEN>``; without that setting every
scrape is refused (401), whatever it sends.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.cache import cache
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dashboard.alerts.figures import miss_cost
from dashboard.costs.pricing import Price, Tokens, price_match, prices_load
from dashboard.models import Alert, RequestAnalysis, UsageRollup

LABELS = ["source", "client_version", "model"]
CACHE_KEY = "cachescope:metrics"
BUCKETS = (
    ("uncached_input_tokens", "cachescope_uncached_input_tokens", "Uncached input tokens."),
    ("cache_read_tokens", "cachescope_cache_read_tokens", "Tokens read from the prompt cache."),
    (
        "cache_write_5m_tokens",
        "cachescope_cache_write_5m_tokens",
        "Tokens written to the cache for 5 minutes.",
    ),
    ("cache_write_1h_tokens", "cachescope_cache_write_1h_tokens", "Tokens written to the cache for an hour."),
    ("output_tokens", "cachescope_output_tokens", "Output tokens."),
)
Key = tuple[str, str, str]


class FleetCollector(Collector):
    """The fleet's figures at ``now``, read once per collection."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        totals = _totals()
        prices = prices_load()
        requests = CounterMetricFamily("cachescope_requests", "Provider requests stored.", labels=LABELS)
        tokens = {field: CounterMetricFamily(name, text, labels=LABELS) for field, name, text in BUCKETS}
        for key, row in sorted(totals.items()):
            requests.add_metric(list(key), row["requests"])
            for field, _, _ in BUCKETS:
                tokens[field].add_metric(list(key), row[field] or 0)
        yield requests
        yield from tokens.values()
        yield from _miss_metrics(totals, prices)
        yield _hit_rate_gauge(self.now)
        open_alerts = GaugeMetricFamily("cachescope_alerts_open", "Alerts open now.")
        open_alerts.add_metric([], Alert.objects.open().count())
        yield open_alerts


def _totals() -> dict[Key, dict[str, Any]]:
    rows = (
        UsageRollup.objects.filter(granularity=UsageRollup.Granularity.DAY)
        .values("source__name", "client_version", "model")
        .annotate(requests=Sum("requests"), **{field: Sum(field) for field, _, _ in BUCKETS})
        .order_by()
    )
    return {(row["source__name"], row["client_version"], row["model"]): row for row in rows}


def _miss_metrics(totals: dict[Key, dict[str, Any]], prices: list[Price]) -> Iterator[Metric]:
    """Re-processed tokens and what they cost beyond the read price, at each cell's write rate."""
    rows = (
        RequestAnalysis.objects.filter(wasted_tokens__gt=0)
        .values("request__session__source__name", "request__client_version", "request__model")
        .annotate(missed=Sum("wasted_tokens"))
        .order_by()
    )
    reprocessed = CounterMetricFamily(
        "cachescope_reprocessed_tokens",
        "Tokens the previous request of the lineage had cached that a request processed again.",
        labels=LABELS,
    )
    cost = CounterMetricFamily(
        "cachescope_miss_cost_usd",
        "What re-processed tokens cost beyond the read price, in USD.",
        labels=LABELS,
    )
    for row in rows:
        key = (row["request__session__source__name"], row["request__client_version"], row["request__model"])
        reprocessed.add_metric(list(key), row["missed"])
        total = totals.get(key, {})
        mix = Tokens(
            cache_write_5m=total.get("cache_write_5m_tokens") or 0,
            cache_write_1h=total.get("cache_write_1h_tokens") or 0,
        )
        price = price_match(model=key[2], prices=prices)
        cost.add_metric(list(key), float(miss_cost(row["missed"], mix, price) if price else Decimal(0)))
    yield reprocessed
    yield cost


def _hit_rate_gauge(now: datetime) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(
        "cachescope_hit_rate",
        "Cache read ÷ (uncached + read + writes) over the last 24 hours; absent when nothing was reported.",
        labels=LABELS,
    )
    rows = (
        UsageRollup.objects.filter(
            granularity=UsageRollup.Granularity.HOUR,
            bucket_start__gte=now - timedelta(hours=24),
            cache_reported__gt=0,
        )
        .values("source__name", "client_version", "model")
        .annotate(
            uncached=Sum("uncached_input_tokens"),
            read=Sum("cache_read_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by("source__name", "client_version", "model")
    )
    for row in rows:
        prompt = row["uncached"] + row["read"] + row["write_5m"] + row["write_1h"]
        if prompt:
            gauge.add_metric([row["source__name"], row["client_version"], row["model"]], row["read"] / prompt)
    return gauge


def metrics_text(*, now: datetime) -> bytes:
    """The exposition text of the fleet's figures at ``now``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(now))
    return generate_latest(registry)


def _authorized(request: HttpRequest) -> bool:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    token = settings.CACHESCOPE_METRICS_TOKEN
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())


def _unauthorized(message: str) -> HttpResponse:
    response = HttpResponse(message, status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="cachescope-metrics"'
    return response


@login_not_required  # a scraper has a token, not a session; the token is checked below
def metrics(request: HttpRequest) -> HttpResponse:
    """The exposition text, for a scraper with the token (checked before the method, so a caller
    without one learns nothing)."""
    if not settings.CACHESCOPE_METRICS_TOKEN:
        return _unauthorized("/metrics is off: set CACHESCOPE_METRICS_TOKEN to serve it\n")
    if not _authorized(request):
        return _unauthorized("send 'Authorization: Bearer <CACHESCOPE_METRICS_TOKEN>'\n")
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    body = cache.get(CACHE_KEY)
    if body is None:
        body = metrics_text(now=timezone.now())
        cache.set(CACHE_KEY, body, settings.CACHESCOPE_METRICS_CACHE_SECONDS)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
