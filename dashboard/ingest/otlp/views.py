"""The OTLP/HTTP receiver: ``POST /v1/logs``, ``/v1/traces`` and ``/v1/metrics`` (the paths an
exporter appends to ``OTEL_EXPORTER_OTLP_ENDPOINT``), with the ingestion API's per-source tokens.

Answers follow the OTLP/HTTP specification: 200 with an ``Export*ServiceResponse`` (its
``partial_success`` naming each rejected record and why), or a ``google.rpc.Status`` with 400 (not
a valid body), 401 (no or an unknown token), 405, 413 (past the ingestion API's limits), 415 (an
encoding OTLP/HTTP does not define) or 429 with ``Retry-After`` when the task broker is down, which
exporters retry. Both bodies are in the request's encoding. Metrics are acknowledged and not kept:
Claude Code's metrics repeat what its events say, per session, without the calls. So they need no
broker, whose only part here is to analyse what is stored, and are acknowledged while it is down.

Like the ingestion API, these views sit outside the login pages and CSRF: each request carries its
token and no cookie.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.access.tokens import token_authenticate
from dashboard.ingest.api.body import BodyRejected, body_read
from dashboard.ingest.api.http import (
    BROKER_RETRY_AFTER_SECONDS,
    DATABASE_RETRY_AFTER_SECONDS,
    REALM,
    bearer_secret,
    database_down_message,
    request_body_stream,
    request_content_length,
)
from dashboard.ingest.followups import broker_reachable, followups_resend

if TYPE_CHECKING:
    from dashboard.ingest.otlp.body import Encoding, Signal

STORED_SIGNALS: frozenset[str] = frozenset({"logs", "traces"})
"""The signals whose records are kept, and so need the broker to analyse them; metrics are not kept."""

# The OTLP services (protobuf's generated classes, the ingest engine) are imported inside the
# functions that use them: every command that starts Django imports the URLs, and so this module.


def _answer(encoding: Encoding, status: int, body: bytes) -> HttpResponse:
    from dashboard.ingest.otlp.body import PROTOBUF_TYPE

    content_type = PROTOBUF_TYPE if encoding == "protobuf" else "application/json"
    return HttpResponse(body, status=status, content_type=content_type)


def _failure(encoding: Encoding, status: int, message: str, code: int | None = None) -> HttpResponse:
    from dashboard.ingest.otlp.body import INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED, otlp_status

    status_codes = {400: INVALID_ARGUMENT, 405: UNIMPLEMENTED, 413: RESOURCE_EXHAUSTED, 415: INVALID_ARGUMENT}
    code = code if code is not None else status_codes.get(status, INVALID_ARGUMENT)
    return _answer(encoding, status, otlp_status(encoding, code=code, message=message))


def _receive(request: HttpRequest, signal: Signal) -> HttpResponse:
    """One export, answered as OTLP answers; 503 with ``Retry-After`` (which an exporter retries
    after waiting) while the database is unavailable, rather than Django's 500 page."""
    from dashboard.ingest.otlp.body import UNAVAILABLE, otlp_encoding

    try:
        return _export(request, signal)
    except (OperationalError, InterfaceError) as error:
        message = database_down_message(error)
        if message is None:
            raise
    encoding = otlp_encoding(request.headers.get("Content-Type", "")) or "protobuf"
    response = _failure(encoding, 503, message, UNAVAILABLE)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


def _export(request: HttpRequest, signal: Signal) -> HttpResponse:
    from dashboard.ingest.otlp.body import (
        UNAUTHENTICATED,
        UNAVAILABLE,
        otlp_encoding,
        otlp_request_dict,
        otlp_success,
    )
    from dashboard.ingest.otlp.records import otlp_ingest

    encoding = otlp_encoding(request.headers.get("Content-Type", ""))
    answer_encoding: Encoding = encoding or "protobuf"
    secret = bearer_secret(request)
    token = token_authenticate(secret=secret, now=timezone.now()) if secret is not None else None
    if token is None:
        why = "send 'Authorization: Bearer <token>'" if secret is None else "the token is unknown or revoked"
        response = _failure(answer_encoding, 401, why, UNAUTHENTICATED)
        response["WWW-Authenticate"] = REALM + ("" if secret is None else ', error="invalid_token"')
        return response
    if request.method != "POST":
        response = _failure(answer_encoding, 405, f"use POST to export {signal}")
        response["Allow"] = "POST"
        return response
    if encoding is None:
        return _failure(answer_encoding, 415, "send Content-Type application/x-protobuf or application/json")
    if signal in STORED_SIGNALS and not broker_reachable():
        # 429 and Retry-After are what an OTLP exporter retries after waiting; nothing was kept.
        response = _failure(
            encoding, 429, "the task broker is unreachable; nothing was stored: export again", UNAVAILABLE
        )
        response["Retry-After"] = str(BROKER_RETRY_AFTER_SECONDS)
        return response
    try:
        content_length = request_content_length(request)
        with body_read(
            stream=request_body_stream(request, content_length),
            content_length=content_length,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.CACHESCOPE_API_MAX_BYTES,
        ) as body:
            decoded, repaired = otlp_request_dict(body.read(), signal=signal, encoding=encoding)
        if signal == "metrics":
            # Read, so a malformed body is refused as the others are, then acknowledged, not kept.
            return _answer(encoding, 200, otlp_success(signal, encoding, rejected=0, message=""))
        result = otlp_ingest(request=decoded, signal=signal, source=token.source)
    except BodyRejected as rejected:
        return _failure(encoding, rejected.status, rejected.message)
    # The broker answers: enqueue what an earlier request, cut off after its commit, left behind.
    followups_resend()
    message = result.message()
    if repaired:
        message = "; ".join(part for part in (message, repaired) if part)
    return _answer(
        encoding, 200, otlp_success(signal, encoding, rejected=len(result.rejected), message=message)
    )


@csrf_exempt
@login_not_required
def logs(request: HttpRequest) -> HttpResponse:
    """Claude Code's telemetry events (and any other log records, which are not kept)."""
    return _receive(request, "logs")


@csrf_exempt
@login_not_required
def traces(request: HttpRequest) -> HttpResponse:
    """GenAI spans: one request per inference span, grouped by conversation."""
    return _receive(request, "traces")


@csrf_exempt
@login_not_required
def metrics(request: HttpRequest) -> HttpResponse:
    """Metrics, read and acknowledged so a shared exporter configuration does not fail."""
    return _receive(request, "metrics")
