"""What the ingestion API (``dashboard/ingest/api/views.py``) and the OTLP receiver
(``dashboard/ingest/otlp/views.py``) read off an HTTP request alike: the bearer token, and the body
with its declared length, chunked or not. Each endpoint answers in its own format; only the reading
is shared, so the two doors cannot come to read one request differently.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse

from dashboard.ingest.api.body import Readable
from dashboard.storage.db_outage import is_unavailable, unavailable_reason

REALM = 'Bearer realm="cachescope"'
"""The ``WWW-Authenticate`` challenge of a 401, to which ``, error="invalid_token"`` is added for a
token that was sent but is unknown or revoked."""
BROKER_RETRY_AFTER_SECONDS = 30
"""What ``Retry-After`` suggests while the task broker is unreachable."""
DATABASE_RETRY_AFTER_SECONDS = 30
"""What ``Retry-After`` suggests while the database is unavailable."""

JsonView = Callable[..., JsonResponse]


def database_down_message(error: BaseException) -> str | None:
    """The answer's words for ``error`` when it says the database is unavailable, else ``None``.

    A batch is stored in one transaction (a background batch, a step of its sessions at a time),
    so what the database did not commit is not stored, and sending it again adds only what is missing.
    """
    if not isinstance(error, OperationalError | InterfaceError) or not is_unavailable(error):
        return None
    return (
        f"the database is unavailable ({unavailable_reason(error)}); nothing more of this request was "
        "stored: send it again later"
    )


def database_down_as_503(view: JsonView) -> JsonView:
    """``view``, answering 503 JSON with ``Retry-After`` while the database is unavailable, as it
    answers while the broker is down, rather than Django's 500 page."""

    @functools.wraps(view)
    def answered(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
        try:
            return view(request, *args, **kwargs)
        except (OperationalError, InterfaceError) as error:
            message = database_down_message(error)
            if message is None:
                raise
        response = JsonResponse({"error": message}, status=503)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response

    return answered


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
