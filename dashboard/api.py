"""The ingestion endpoint: ``POST /api/v1/ingest`` with a per-source bearer token (docs/api.md).

No framework: the token is checked once, the body is read within its limits, and one service call
stores it. The endpoint sits outside the login pages and CSRF, since it authenticates each request
by its token and carries no cookie.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.services.api_ingest import BatchLimits, BodyRejected, Readable, api_ingest, body_read
from dashboard.services.followups import broker_reachable, followups_resend
from dashboard.services.tokens import token_authenticate

REALM = 'Bearer realm="cachescope"'
BROKER_RETRY_AFTER_SECONDS = 30


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _unauthorized(message: str, *, invalid: bool) -> JsonResponse:
    response = _error(401, message)
    response["WWW-Authenticate"] = REALM + (', error="invalid_token"' if invalid else "")
    return response


def _bearer(request: HttpRequest) -> str | None:
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _content_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _body_stream(request: HttpRequest, content_length: int | None) -> Readable:
    """Where the body is read from: the request, or the server's input for a chunked body.

    Django reads a body without ``Content-Length`` as empty. A chunked body has none, so it is read
    from the WSGI input, which the server de-chunks and ends at the last chunk; the byte limit is
    enforced while it is read, as for any body.
    """
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if content_length is None and chunked and "wsgi.input" in request.META:
        stream: Readable = request.META["wsgi.input"]
        return stream
    return request


@csrf_exempt
@login_not_required
def ingest(request: HttpRequest) -> JsonResponse:
    """Store the NDJSON sessions of the body for the token's source; answer counts and per-line errors."""
    # The token is checked before the method, so a caller without one learns nothing here.
    secret = _bearer(request)
    if secret is None:
        return _unauthorized("send 'Authorization: Bearer <token>'", invalid=False)
    token = token_authenticate(secret=secret, now=timezone.now())
    if token is None:
        return _unauthorized("the token is unknown or revoked", invalid=True)
    if request.method != "POST":
        response = _error(405, "use POST with an NDJSON body")
        response["Allow"] = "POST"
        return response
    if not broker_reachable():
        # Refuse before reading: nothing is stored, and the client sends the batch again later.
        response = _error(503, "the task broker is unreachable; nothing was stored: send this batch again")
        response["Retry-After"] = str(BROKER_RETRY_AFTER_SECONDS)
        return response
    try:
        content_length = _content_length(request)
        body = body_read(
            stream=_body_stream(request, content_length),
            content_length=content_length,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.CACHESCOPE_API_MAX_BYTES,
        )
        with body:
            result = api_ingest(body=body, source=token.source, limits=BatchLimits.from_settings())
    except BodyRejected as rejected:
        return _error(rejected.status, rejected.message)
    # The broker answers: enqueue what an earlier request, cut off after its commit, left behind.
    followups_resend()
    answer = result.as_dict()
    if result.analysis_pending:
        answer["message"] = (
            "the data was stored; analysis is pending because the task broker is unreachable, "
            "and the next ingest of these sessions enqueues it again"
        )
        return JsonResponse(answer, status=202)
    return JsonResponse(answer)
