"""A session fed by telemetry reads like one ingested from files: hit rate, cost and the transcript
predictor's verdicts, on its page and its requests' pages; and the OpenTelemetry SDK's own OTLP/HTTP
exporters, pointed at a live server, produce it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from dashboard.access.tokens import token_create
from dashboard.analysis.stored_sessions import session_analyse
from dashboard.costs.ledger import session_cost_compute
from dashboard.models import ModelPrice, Request, Session, Source, Warning
from dashboard.templatetags.cachescope import percent
from tests.dashboard.otlp_payloads import SESSION, T0, api_request, conversation, logs_request

PROTOBUF = "application/x-protobuf"


def with_a_miss() -> list[dict[str, Any]]:
    """The conversation, then a call 10 s later that reads nothing of the 22k tokens cached."""
    return [*conversation(), api_request(30, 6, "req_011D", cache_creation_tokens=23_000)]


def sonnet_price() -> None:
    # A live server's test flushes the database, seeded prices included: state the one used here.
    ModelPrice.objects.update_or_create(
        pattern="claude-sonnet-4-5",
        defaults={
            "provider": "anthropic",
            "input": Decimal(3),
            "cache_write_5m": Decimal("3.75"),
            "cache_write_1h": Decimal(6),
            "cache_read": Decimal("0.30"),
            "output": Decimal(15),
            "read_on": date(2026, 12, 3),
        },
    )


def viewer() -> Client:
    user = User.objects.create_user(username="viewer", password="a-long-test-password")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_a_telemetry_session_page_shows_its_hit_rate_cost_and_verdicts() -> None:
    sonnet_price()
    source = Source.objects.create(name="fleet")
    _token, secret = token_create(source=source, name="seats", created_by=None)
    Client().post(
        "/v1/logs",
        data=logs_request(with_a_miss()).SerializeToString(),
        content_type=PROTOBUF,
        headers={"Authorization": f"Bearer {secret}"},
    )
    session = Session.objects.get(external_id=SESSION)
    session_analyse(session_id=session.pk)
    session.refresh_from_db()
    miss = Request.objects.get(key="req_011D")

    client = viewer()
    page = client.get(session.get_absolute_url()).content.decode()
    request_page = client.get(miss.get_absolute_url()).content.decode()

    cost = session_cost_compute(session=session)
    assert cost.total is not None
    assert cost.total > 0
    assert percent(session.hit_rate) in page
    assert f'<span class="label">Cost</span><span class="value" title="{cost.total}' in page
    assert miss.analysis.label == "unexplained"
    assert miss.analysis.material is True
    assert Warning.objects.filter(session=session, kind=Warning.Kind.UNEXPLAINED_MISS).exists()
    assert "unexplained-miss" in page
    assert "unexplained" in request_page
    # Claude Code's own estimate of the call's cost and duration, beside the price table's.
    assert "<th><code>cost_usd</code></th><td>0.0123</td>" in request_page
    assert "user.email=ana@example.com" in page


def claude_code_exporter(url: str, secret: str) -> LoggerProvider:
    provider = LoggerProvider(
        resource=Resource.create({"service.name": "claude-code", "service.version": "2.1.30"})
    )
    exporter = OTLPLogExporter(
        endpoint=f"{url}/v1/logs", headers={"Authorization": f"Bearer {secret}"}, compression=Compression.Gzip
    )
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider


@pytest.mark.django_db(transaction=True)
def test_the_sdk_exporters_feed_a_session_with_hit_rate_and_cost(live_server: Any) -> None:
    sonnet_price()
    source = Source.objects.create(name="fleet")
    _token, secret = token_create(source=source, name="seats", created_by=None)

    provider = claude_code_exporter(live_server.url, secret)
    logger = provider.get_logger("com.anthropic.claude_code.events", "2.1.30")
    for event in with_a_miss():
        logger.emit(
            timestamp=event["time"],
            body=f"claude_code.{event['name']}",
            event_name=f"claude_code.{event['name']}",
            attributes={key: value for key, value in event["attributes"].items()},
        )
    provider.shutdown()

    tracer_provider = TracerProvider(
        resource=Resource.create({"service.name": "my-agent", "service.version": "0.4.1"})
    )
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(
                endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {secret}"}
            )
        )
    )
    tracer = tracer_provider.get_tracer("my-agent.genai")
    for index, (read, write) in enumerate([(0, 9_000), (9_000, 1_500)]):
        start = T0 + index * 10_000_000_000
        span = tracer.start_span(
            "chat claude-sonnet-4-5",
            start_time=start,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "anthropic",
                "gen_ai.request.model": "claude-sonnet-4-5",
                "gen_ai.conversation.id": "conv-sdk",
                "gen_ai.usage.input_tokens": 1_000 + read + write,
                "gen_ai.usage.output_tokens": 40,
                "gen_ai.usage.cache_read.input_tokens": read,
                "gen_ai.usage.cache_creation.input_tokens": write,
            },
        )
        span.end(end_time=start + 1_000_000_000)
    tracer_provider.shutdown()

    telemetry = Session.objects.get(external_id=SESSION)
    spans = Session.objects.get(external_id="conv-sdk")
    assert telemetry.request_count == 5
    assert telemetry.hit_rate == pytest.approx(
        (20_000 + 21_500) / (12 * 4 + 20_000 + 20_000 + 1_500 + 21_500 + 900 + 23_000)
    )
    assert session_cost_compute(session=telemetry).total is not None
    assert telemetry.labels["organization.id"] == "org-42"
    assert spans.hit_rate == pytest.approx(9_000 / (2_000 + 9_000 + 10_500))
    # Without a broker the analysis runs on commit, before the server answers the exporter.
    assert Request.objects.filter(session=telemetry, analysis__isnull=False).count() == 5
    assert Request.objects.get(key="req_011D").analysis.label == "unexplained"


@pytest.mark.django_db
def test_a_compaction_call_is_a_boundary_so_the_next_read_is_not_unexplained() -> None:
    source = Source.objects.create(name="fleet")
    _token, secret = token_create(source=source, name="seats", created_by=None)
    events = [
        api_request(3, 1, "req_main_1", cache_read_tokens=3_000, cache_creation_tokens=20_000),
        api_request(8, 2, "req_main_2", cache_read_tokens=23_000, cache_creation_tokens=1_000),
        api_request(20, 3, "req_compact", query_source="compact", cache_read_tokens=3_000),
        api_request(30, 4, "req_main_3", cache_read_tokens=3_000, cache_creation_tokens=4_000),
    ]
    body = logs_request(events).SerializeToString()
    headers = {"Authorization": f"Bearer {secret}"}
    for _attempt in range(2):  # the exporter's retry adds no second compaction
        Client().post("/v1/logs", data=body, content_type=PROTOBUF, headers=headers)

    session = Session.objects.get(external_id=SESSION)
    assert list(session.events.values_list("seq", "type")) == [(0, "compaction/start"), (1, "compaction/end")]
    assert Request.objects.get(key="req_compact").lineage == "compaction"
    session_analyse(session_id=session.pk)
    after = Request.objects.get(key="req_main_3").analysis
    assert after.label == "compacted"
