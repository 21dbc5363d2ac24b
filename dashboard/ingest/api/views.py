"""The ingestion endpoints, with a per-source bearer token (docs/api.md): ``POST /api/v1/ingest``
stores a batch while the client waits; ``POST /api/v1/batches`` saves a larger one for the ingest
task and answers 202 with its job, which ``GET /api/v1/batches/<id>`` reports.

No framework: the token is checked once, the body is read within its limits, and one service call
stores (or saves) it. The endpoint sits outside the login pages and CSRF, since it authenticates each request
by its token and carries no cookie.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.access.tokens import token_authenticate
from dashboard.ingest.api.body import BodyRejected, body_read
from dashboard.ingest.api.http import (
    BROKER_RETRY_AFTER_SECONDS,
    REALM,
    bearer_secret,
    database_down_as_503,
    request_body_stream,
    request_content_length,
)
from dashboard.ingest.followups import broker_reachable, followups_resend
from dashboard.ingest.uploads import upload_remove_files
from dashboard.models import ApiToken, IngestJob

# The ingest services (with the engine's readers) and the task layer (with Celery) are imported inside
# the views that use them: every command that starts Django imports the URLs, and so this module.

POLL_AFTER_SECONDS = 2
"""What ``Retry-After`` suggests between two polls of an unfinished batch."""


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _unauthorized(message: str, *, invalid: bool) -> JsonResponse:
    response = _error(401, message)
    response["WWW-Authenticate"] = REALM + (', error="invalid_token"' if invalid else "")
    return response


def _token(request: HttpRequest) -> ApiToken | JsonResponse:
    """The request's live token, or the 401 answer to send instead."""
    secret = bearer_secret(request)
    if secret is None:
        return _unauthorized("send 'Authorization: Bearer <token>'", invalid=False)
    token = token_authenticate(secret=secret, now=timezone.now())
    if token is None:
        return _unauthorized("the token is unknown or revoked", invalid=True)
    return token


def _wrong_method(allowed: str, message: str) -> JsonResponse:
    response = _error(405, message)
    response["Allow"] = allowed
    return response


def _broker_down(message: str) -> JsonResponse:
    response = _error(503, message)
    response["Retry-After"] = str(BROKER_RETRY_AFTER_SECONDS)
    return response


def _post_admitted(request: HttpRequest, *, nothing_kept: str) -> ApiToken | JsonResponse:
    """The token of a POST whose body may be read, or the answer to send instead.

    The token is checked before the method, so a caller without one learns nothing. The broker is
    checked before the body is read: nothing is kept, no large body is received only to be thrown
    away, and the client sends the batch again later. ``nothing_kept`` says so in the 503 answer.
    """
    token = _token(request)
    if isinstance(token, JsonResponse):
        return token
    if request.method != "POST":
        return _wrong_method("POST", "use POST with an NDJSON body")
    if not broker_reachable():
        return _broker_down(f"the task broker is unreachable; {nothing_kept}: send this batch again")
    return token


@csrf_exempt
@login_not_required
@database_down_as_503
def ingest(request: HttpRequest) -> JsonResponse:
    """Store the NDJSON sessions of the body for the token's source; answer counts and per-line errors."""
    from dashboard.ingest.api.lines import BatchLimits, api_ingest

    token = _post_admitted(request, nothing_kept="nothing was stored")
    if isinstance(token, JsonResponse):
        return token
    try:
        content_length = request_content_length(request)
        body = body_read(
            stream=request_body_stream(request, content_length),
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


@csrf_exempt
@login_not_required
@database_down_as_503
def batches(request: HttpRequest) -> JsonResponse:
    """Save an NDJSON body as a background batch of the token's source; answer 202 and where to poll."""
    from dashboard.ingest.api.batches import api_batch_create, api_batch_status
    from dashboard.worker.tasks import ingest_job_enqueue

    token = _post_admitted(request, nothing_kept="nothing was saved")
    if isinstance(token, JsonResponse):
        return token
    try:
        content_length = request_content_length(request)
        job = api_batch_create(
            stream=request_body_stream(request, content_length),
            content_length=content_length,
            content_encoding=request.headers.get("Content-Encoding", ""),
            source=token.source,
            label=f"API batch (token {token.name})",
        )
    except BodyRejected as rejected:
        return _error(rejected.status, rejected.message)
    location = reverse("api_batch", args=[job.pk])
    if not ingest_job_enqueue(job.pk):
        # The broker dropped after the check. The job stays, marked not queued, for the record; its
        # body is deleted since the client is told to send it again.
        job.refresh_from_db()
        upload_remove_files(job)
        IngestJob.objects.filter(pk=job.pk).update(paths=[])
        response = _broker_down("the task broker refused the batch; nothing will be stored: send it again")
        response["Location"] = location
        return response
    job.refresh_from_db()
    response = JsonResponse(api_batch_status(job), status=202)
    response["Location"] = location
    return response


@csrf_exempt
@login_not_required
@database_down_as_503
def batch(request: HttpRequest, job_id: int) -> JsonResponse:
    """A batch's status, progress, counts and per-line errors; only its own source's token sees it."""
    from dashboard.ingest.api.batches import api_batch_for_source, api_batch_status

    token = _token(request)
    if isinstance(token, JsonResponse):
        return token
    if request.method != "GET":
        return _wrong_method("GET", "use GET to read a batch's status")
    job = api_batch_for_source(job_id=job_id, source=token.source)
    if job is None:
        return _error(404, f"no batch {job_id} for this token's source")
    response = JsonResponse(api_batch_status(job))
    if not job.is_finished and job.status != IngestJob.Status.NOT_QUEUED:
        response["Retry-After"] = str(POLL_AFTER_SECONDS)
    return response
