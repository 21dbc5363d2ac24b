"""The reading of an ingest request that the ingestion API and the OTLP receiver share."""

from __future__ import annotations

import io

import pytest
from django.test import RequestFactory

from dashboard.ingest.api import http as ingest_http
from dashboard.ingest.api import views as api
from dashboard.ingest.api.http import bearer_secret, request_body_stream, request_content_length
from dashboard.ingest.otlp import views as otlp

factory = RequestFactory()


@pytest.mark.parametrize(
    ("header", "secret"),
    [
        ("Bearer csk_abc", "csk_abc"),
        ("bearer   csk_abc  ", "csk_abc"),
        ("Basic dXNlcjpwdw==", None),
        ("Bearer", None),
        ("Bearer    ", None),
        (None, None),
    ],
)
def test_only_a_bearer_header_with_a_token_gives_a_secret(header: str | None, secret: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    assert bearer_secret(factory.post("/", headers=headers)) == secret


def test_an_absent_or_unreadable_content_length_is_none() -> None:
    request = factory.post("/", data=b"12345", content_type="application/json")
    assert request_content_length(request) == 5
    request.META["CONTENT_LENGTH"] = "five"
    assert request_content_length(request) is None
    del request.META["CONTENT_LENGTH"]
    assert request_content_length(request) is None


def test_a_chunked_body_without_a_length_is_read_from_the_server_input() -> None:
    server_input = io.BytesIO(b"chunk")
    chunked = factory.post("/", headers={"Transfer-Encoding": "chunked"}, **{"wsgi.input": server_input})
    assert request_body_stream(chunked, None) is server_input
    # With a length, or without chunking, Django's own reading of the body serves.
    assert request_body_stream(chunked, 5) is chunked
    plain = factory.post("/", data=b"{}", content_type="application/json")
    assert request_body_stream(plain, None) is plain


def test_both_ingest_doors_read_requests_with_the_one_module() -> None:
    for door in (api, otlp):
        assert door.bearer_secret is ingest_http.bearer_secret
        assert door.request_body_stream is ingest_http.request_body_stream
        assert door.request_content_length is ingest_http.request_content_length
