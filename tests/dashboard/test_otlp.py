from __future__ import annotations

import gzip
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.test.utils import override_settings
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Metric,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)

from dashboard.access.tokens import token_create, token_revoke
from dashboard.ingest.otlp import views as otlp_views
from dashboard.models import Request, Session, Source
from tests.dashboard.otlp_payloads import (
    SESSION,
    api_request,
    claude_code_event,
    conversation,
    genai_span,
    logs_json,
    logs_request,
    traces_json,
    traces_request,
)

pytestmark = pytest.mark.django_db
PROTOBUF = "application/x-protobuf"
ERROR_KEY = "otel:api_error:2026-01-01T00:00:20+00:00#5"
"""A failed call has no request id: its key is the event's time and sequence number."""


@pytest.fixture
def secret() -> str:
    source = Source.objects.create(name="fleet")
    _token, value = token_create(source=source, name="claude-code-seats", created_by=None)
    return value


def post(
    client: Client, path: str, body: bytes, content_type: str, secret: str | None, **headers: str
) -> Any:
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    return client.post(path, data=body, content_type=content_type, headers=headers)


def post_logs(client: Client, secret: str | None, events: list[dict[str, Any]], **headers: str) -> Any:
    return post(client, "/v1/logs", logs_request(events).SerializeToString(), PROTOBUF, secret, **headers)


def logs_answer(response: Any) -> ExportLogsServiceResponse:
    answer = ExportLogsServiceResponse()
    answer.ParseFromString(response.content)
    return answer


def status_of(response: Any) -> status_pb2.Status:
    status = status_pb2.Status()
    status.ParseFromString(response.content)
    return status


def test_claude_code_events_in_protobuf_become_a_session_of_usage_only_requests(
    client: Client, secret: str
) -> None:
    response = post_logs(client, secret, conversation())

    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    assert not logs_answer(response).HasField("partial_success")
    session = Session.objects.get(external_id=SESSION)
    assert session.format == "claude-code-otel"
    assert session.title == "fix the bug"
    assert session.client_version == "claude-code 2.1.30"
    assert session.labels == {
        "user.id": "7d1c0ffee",
        "organization.id": "org-42",
        "user.account_uuid": "acc-9",
        "user.email": "ana@example.com",
    }
    calls = list(session.requests.order_by("started_at"))
    assert [c.key for c in calls] == ["req_011A", "req_011B", "req_011C", ERROR_KEY]
    first = calls[0]
    assert (first.uncached_input_tokens, first.cache_read_tokens, first.cache_write_5m_tokens) == (
        12,
        0,
        20_000,
    )
    assert first.output_tokens == 80
    assert first.has_body is False
    assert first.usage_raw["cost_usd"] == "0.0123"
    assert first.usage_raw["duration_ms"] == "2000"
    # The event is written when the call ends; it started duration_ms before.
    assert first.started_at.isoformat() == "2026-01-01T00:00:01+00:00"
    error = calls[3]
    assert error.status == 529
    assert error.uncached_input_tokens is None
    assert session.request_count == 4
    assert session.hit_rate == pytest.approx(
        (20_000 + 21_500) / (36 + 20_000 + 20_000 + 1_500 + 21_500 + 900)
    )


def test_the_same_events_in_otlp_json_store_the_same_rows(client: Client, secret: str) -> None:
    body = json.dumps(logs_json(conversation())).encode()
    response = post(client, "/v1/logs", body, "application/json", secret)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {}
    session = Session.objects.get(external_id=SESSION)
    assert sorted(session.requests.values_list("key", "cache_read_tokens")) == [
        (ERROR_KEY, None),
        ("req_011A", 0),
        ("req_011B", 20_000),
        ("req_011C", 21_500),
    ]


def test_an_exporter_retrying_a_batch_adds_nothing(client: Client, secret: str) -> None:
    post_logs(client, secret, conversation())
    again = post_logs(client, secret, conversation())
    gzipped = post(
        client,
        "/v1/logs",
        gzip.compress(json.dumps(logs_json(conversation())).encode()),
        "application/json",
        secret,
        **{"Content-Encoding": "gzip"},
    )

    assert again.status_code == 200
    assert gzipped.status_code == 200
    assert Session.objects.count() == 1
    assert Request.objects.count() == 4


def test_a_gzip_protobuf_body_is_read(client: Client, secret: str) -> None:
    body = gzip.compress(logs_request(conversation()).SerializeToString())
    response = post(client, "/v1/logs", body, PROTOBUF, secret, **{"Content-Encoding": "gzip"})

    assert response.status_code == 200
    assert Request.objects.count() == 4


def test_a_bad_record_is_rejected_alone_and_named_in_partial_success(client: Client, secret: str) -> None:
    events = [
        api_request(3, 1, "req_good"),
        api_request(5, 2, "req_bad", cache_read_tokens="-4"),
        api_request(6, 3, "req_orphan", session=""),
        claude_code_event("tool_decision", 7, 4, tool_name="Edit", decision="accept"),
    ]
    response = post_logs(client, secret, events)

    assert response.status_code == 200
    partial = logs_answer(response).partial_success
    assert partial.rejected_log_records == 2
    assert (
        "log record 2: cache_read_tokens: expected a non-negative whole number of tokens"
        in partial.error_message
    )
    assert "log record 3: session.id:" in partial.error_message
    assert list(Request.objects.values_list("key", flat=True)) == ["req_good"]


def test_partial_success_is_json_for_a_json_request(client: Client, secret: str) -> None:
    events = [api_request(3, 1, "req_good"), api_request(5, 2, "req_bad", input_tokens="lots")]
    response = post(client, "/v1/logs", json.dumps(logs_json(events)).encode(), "application/json", secret)

    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "log record 2: input_tokens" in partial["errorMessage"]


@pytest.mark.parametrize(
    ("authorization", "invalid"),
    [(None, False), ("Bearer csk_not-a-real-token-at-all", True), ("Basic dXNlcjpwYXNz", False)],
)
def test_a_missing_or_unknown_token_is_refused_with_401_and_stores_nothing(
    client: Client, secret: str, authorization: str | None, invalid: bool
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = post(
        client, "/v1/logs", logs_request(conversation()).SerializeToString(), PROTOBUF, None, **headers
    )

    assert response.status_code == 401
    assert ('error="invalid_token"' in response["WWW-Authenticate"]) is invalid
    assert status_of(response).code == 16  # UNAUTHENTICATED
    assert not Session.objects.exists()


def test_a_revoked_token_is_refused(client: Client, secret: str) -> None:
    from django.utils import timezone

    from dashboard.models import ApiToken

    token_revoke(token=ApiToken.objects.get(), now=timezone.now())
    assert post_logs(client, secret, conversation()).status_code == 401


def test_a_body_that_is_not_an_export_request_is_refused_with_400(client: Client, secret: str) -> None:
    garbage = post(client, "/v1/logs", b"\xff\xff\xff not protobuf", PROTOBUF, secret)
    wrong_shape = post(client, "/v1/logs", b'{"resourceLogs": "no"}', "application/json", secret)
    bad_hex = traces_json([genai_span(1)])
    bad_hex["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "not-hex!"
    bad_id = post(client, "/v1/traces", json.dumps(bad_hex).encode(), "application/json", secret)

    assert garbage.status_code == 400
    assert status_of(garbage).code == 3
    assert wrong_shape.status_code == 400
    assert "ExportLogsServiceRequest" in wrong_shape.json()["message"]
    assert bad_id.status_code == 400
    assert "spanId" in bad_id.json()["message"]
    assert not Session.objects.exists()


def test_an_unknown_content_type_is_refused_with_415(client: Client, secret: str) -> None:
    response = post(client, "/v1/logs", b"x", "text/plain", secret)
    assert response.status_code == 415


def test_only_post_is_accepted(client: Client, secret: str) -> None:
    response = client.get("/v1/logs", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 405
    assert response["Allow"] == "POST"


@override_settings(CACHESCOPE_API_MAX_BYTES=2_000)
def test_a_body_past_the_size_limit_is_refused_with_413_even_gzipped(client: Client, secret: str) -> None:
    events = [api_request(i, i, f"req_{i}") for i in range(40)]
    plain = post_logs(client, secret, events)
    packed = post(
        client,
        "/v1/logs",
        gzip.compress(logs_request(events).SerializeToString()),
        PROTOBUF,
        secret,
        **{"Content-Encoding": "gzip"},
    )

    assert plain.status_code == 413
    assert packed.status_code == 413
    assert status_of(plain).code == 8  # RESOURCE_EXHAUSTED
    assert not Request.objects.exists()


@override_settings(CACHESCOPE_API_MAX_RECORDS=3)
def test_a_request_past_the_record_limit_is_refused_with_413(client: Client, secret: str) -> None:
    response = post_logs(client, secret, conversation())
    assert response.status_code == 413
    assert "more than 3" in status_of(response).message
    assert not Session.objects.exists()


@override_settings(CACHESCOPE_API_MAX_SESSIONS=1)
def test_a_request_past_the_session_limit_is_refused_with_413(client: Client, secret: str) -> None:
    events = [api_request(1, 1, "req_a"), api_request(2, 1, "req_b", session="another-session")]
    assert post_logs(client, secret, events).status_code == 413
    assert not Session.objects.exists()


def test_a_broker_that_is_down_answers_429_with_retry_after(
    client: Client, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otlp_views, "broker_reachable", lambda: False)
    response = post_logs(client, secret, conversation())

    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert status_of(response).code == 14  # UNAVAILABLE
    assert not Session.objects.exists()


def test_metrics_are_acknowledged_and_not_kept(client: Client, secret: str) -> None:
    body = ExportMetricsServiceRequest(
        resource_metrics=[
            ResourceMetrics(
                scope_metrics=[
                    ScopeMetrics(
                        metrics=[
                            Metric(
                                name="claude_code.cost.usage",
                                unit="USD",
                                sum=Sum(data_points=[NumberDataPoint(as_double=0.0123)]),
                            )
                        ]
                    )
                ]
            )
        ]
    ).SerializeToString()
    response = post(client, "/v1/metrics", body, PROTOBUF, secret)
    as_json = post(client, "/v1/metrics", b'{"resourceMetrics": []}', "application/json", secret)

    assert response.status_code == 200
    assert as_json.status_code == 200
    assert not Session.objects.exists()


def test_metrics_are_acknowledged_while_the_broker_is_down_since_none_is_kept(
    client: Client, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(otlp_views, "broker_reachable", lambda: asked.append(True) or False)
    response = post(client, "/v1/metrics", b'{"resourceMetrics": []}', "application/json", secret)
    malformed = post(client, "/v1/metrics", b'{"resourceMetrics": 5}', "application/json", secret)

    assert response.status_code == 200
    assert "Retry-After" not in response
    assert malformed.status_code == 400  # still read, and refused as the other signals are
    assert asked == []  # nothing to enqueue, so not even a wait on the broker's timeout


def test_genai_spans_in_protobuf_become_requests_with_exclusive_buckets(client: Client, secret: str) -> None:
    spans = [
        genai_span(0, **{"gen_ai.usage.cache_creation.input_tokens": 9_000}),
        genai_span(
            1,
            **{
                "gen_ai.usage.cache_read.input_tokens": 9_000,
                "gen_ai.usage.cache_creation.input_tokens": 1_500,
            },
        ),
        genai_span(2, conversation=None, **{"gen_ai.operation.name": "invoke_agent"}),
    ]
    response = post(client, "/v1/traces", traces_request(spans).SerializeToString(), PROTOBUF, secret)

    assert response.status_code == 200
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    assert not answer.HasField("partial_success")
    session = Session.objects.get()
    assert (session.external_id, session.format) == ("conv-7", "genai-otel")
    calls = list(session.requests.order_by("started_at"))
    assert [(c.uncached_input_tokens, c.cache_read_tokens, c.cache_write_5m_tokens) for c in calls] == [
        (1_000, None, 9_000),
        (500, 9_000, 1_500),
    ]
    assert calls[0].key == "eee19b7ec3c1b100"
    assert calls[0].client_version == "my-agent 0.4.1"


def test_genai_spans_in_json_with_older_names_and_no_conversation_group_by_trace(
    client: Client, secret: str
) -> None:
    old = {
        "gen_ai.usage.input_tokens": None,
        "gen_ai.usage.output_tokens": None,
        "gen_ai.usage.prompt_tokens": 4_000,
        "gen_ai.usage.completion_tokens": 20,
        "gen_ai.usage.cache_read_input_tokens": 3_000,
        "gen_ai.system": "openai",
    }
    span = genai_span(0, conversation=None, **old)
    span["attributes"] = {k: v for k, v in span["attributes"].items() if v is not None}
    del span["attributes"]["gen_ai.provider.name"]
    response = post(
        client, "/v1/traces", json.dumps(traces_json([span])).encode(), "application/json", secret
    )
    retried = post(client, "/v1/traces", json.dumps(traces_json([span])).encode(), "application/json", secret)

    assert response.status_code == 200
    assert retried.status_code == 200
    call = Request.objects.get()
    assert call.session.external_id == "trace-5b8efff798038103d269b633813fc60c"
    assert (call.provider, call.uncached_input_tokens, call.cache_read_tokens, call.output_tokens) == (
        "openai",
        1_000,
        3_000,
        20,
    )


def test_the_sessions_list_filters_by_a_telemetry_label(viewer_client: Client, secret: str) -> None:
    Client().post(
        "/v1/logs",
        data=logs_request(conversation()).SerializeToString(),
        content_type=PROTOBUF,
        headers={"Authorization": f"Bearer {secret}"},
    )
    other = Session.objects.create(
        source=Source.objects.get(), external_id="from-a-file", format="claude-code"
    )

    mine = viewer_client.get("/sessions/", {"label": "user.email=ana@example.com"})
    anyone = viewer_client.get("/sessions/", {"label": "organization.id"})
    nobody = viewer_client.get("/sessions/", {"label": "user.email=bo@example.com"})
    bad = viewer_client.get("/sessions/", {"label": "no spaces please=x"})

    # The list names a session by its title, here its first prompt.
    assert "fix the bug" in mine.content.decode()
    assert other.external_id not in mine.content.decode()
    assert "fix the bug" in anyone.content.decode()
    assert "fix the bug" not in nobody.content.decode()
    assert "label: " in bad.content.decode()
    assert other.external_id in bad.content.decode()


def test_a_chunked_json_body_as_claude_codes_exporter_frames_it_is_read(client: Client, secret: str) -> None:
    body = json.dumps(logs_json(conversation())).encode()
    response = client.generic(
        "POST",
        "/v1/logs",
        data=b"",
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}", "Transfer-Encoding": "chunked"},
        # The test client drops the type of an empty body; the exporter's chunked one has it.
        **{"wsgi.input": io.BytesIO(body), "CONTENT_TYPE": "application/json"},
    )
    assert response.status_code == 200, response.content
    assert Request.objects.count() == 4


def test_a_nul_in_a_protobuf_string_is_stored_as_u_fffd_and_said(client: Client, secret: str) -> None:
    response = post_logs(client, secret, [api_request(3, 1, "req_nul", model="claude-sonnet-4-5\x00x")])

    partial = logs_answer(response).partial_success
    assert partial.rejected_log_records == 0
    assert "replaced 1 NUL by U+FFFD" in partial.error_message
    assert Request.objects.get().model == "claude-sonnet-4-5\ufffdx"


def test_the_receiver_needs_no_csrf_token_since_each_request_carries_its_own(secret: str) -> None:
    strict = Client(enforce_csrf_checks=True)
    response = post(strict, "/v1/logs", logs_request(conversation()).SerializeToString(), PROTOBUF, secret)
    assert response.status_code == 200
