"""What the ingestion API (``dashboard/ingest/api/views.py``) and the OTLP receiver
(``dashboard/ingest/otlp/views.py``) read off an HTTP request alike: the bearer token, and the body
with its declared length, chunked or not. Each endpoint answers in its own format; only the reading
is shared, so the two doors cannot come to read one request differently.
"""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.ingest.api.body import Readable

REALM = 'Bearer realm="cachescope"'
"""The ``WWW-Authenticate`` challenge of a 401, to which ``, error="invalid_token"`` is added for a
token that was sent but is unknown or revoked."""
BROKER_RETRY_AFTER_SECONDS = 30
"""What ``Retry-After`` suggests while the task broker is unreachable."""


def bearer_secret(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case), or ``None``
    when there is no such header or it carries no token."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def request_content_length(request: HttpRequest) -> int | None:
    """The declared ``Content-Length``, or ``None`` when absent or not a number."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def request_body_stream(request: HttpRequest, content_length: int | None) -> Readable:
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
