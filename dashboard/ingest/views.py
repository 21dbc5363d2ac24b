from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from dashboard.access.roles import ADMIN, OPERATOR, has_role
from dashboard.ingest.jobs import ingest_job_requeue, ingest_job_retryable
from dashboard.ingest.uploads import UploadRejected, upload_create_job
from dashboard.models import IngestJob
from dashboard.web.htmx import HtmxHttpRequest
from projections.format_names import FORMAT_NAMES

NOTICES_SHOWN = 200
"""Notices listed on a job's page; a repaired file can have one per line, and each says the same."""
SESSIONS_SHOWN = 20
"""Sessions a job's page names; the sessions list, filtered by the job, has them all."""


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def clean(self, data: object, initial: object = None) -> list[object]:
        single = super().clean
        if isinstance(data, list | tuple):
            if not data and self.required:
                # Also what a file whose name cannot be used (``..``) comes to: Django drops it.
                raise forms.ValidationError(
                    "Choose at least one file to upload (a file named “..” or with no name is dropped)."
                )
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class UploadForm(forms.Form):
    files = MultipleFileField(help_text="Log files, or a .zip of a folder of logs.")
    source = forms.SlugField(
        max_length=100, initial="uploads", help_text="The agent host these logs come from."
    )
    format = forms.ChoiceField(
        choices=[("", "detect")] + [(name, name) for name in FORMAT_NAMES], required=False
    )


@require_http_methods(["GET", "POST"])
def ingest_page(request: HttpRequest) -> HttpResponse:
    can_upload = has_role(request.user, OPERATOR)
    form = UploadForm()
    if request.method == "POST":
        if not can_upload:
            return render(request, "403.html", {"reason": "Uploading needs the operator role."}, status=403)
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = upload_create_job(
                    files=form.cleaned_data["files"],
                    source_name=form.cleaned_data["source"],
                    format=form.cleaned_data["format"] or None,
                    user=request.user,
                )
            except UploadRejected as rejected:
                form.add_error("files", rejected.reasons)
            else:
                from dashboard.worker.tasks import (
                    ingest_job_enqueue,  # the task layer (and Celery) loads on first use
                )

                # Sent once the job's row is committed; a broker that does not answer marks it not queued.
                transaction.on_commit(lambda: ingest_job_enqueue(job.pk))
                return HttpResponseRedirect(job.get_absolute_url())
    jobs = Paginator(IngestJob.objects.select_related("created_by"), 30).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "jobs": jobs,
        "can_upload": can_upload,
        "max_upload_mb": settings.CACHESCOPE_MAX_UPLOAD_BYTES // (1024 * 1024),
    }
    return render(request, "dashboard/ingest.html", context, status=400 if form.errors else 200)


@require_GET
def ingest_job(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(IngestJob, pk=job_id)
    if request.htmx:
        # A job no broker took waits for a retry, which reloads the page: polling would show nothing new.
        waiting = job.is_finished or job.status == IngestJob.Status.NOT_QUEUED
        status = HttpResponseStopPolling.status_code if waiting else 200
        context = {"job": job, "can_retry": _can_retry(request, job)}
        return render(request, "dashboard/ingest_job.html#job-progress", context, status=status)
    errors = Paginator(job.errors.all(), 200).get_page(request.GET.get("page"))
    notices = job.notices.all()[:NOTICES_SHOWN]
    context = {
        "job": job,
        "sessions": job.sessions.select_related("source").order_by("-last_activity", "-id")[:SESSIONS_SHOWN],
        "sessions_total": job.sessions.count(),
        "elsewhere": job.sessions_elsewhere.select_related("source").order_by("pk")[:SESSIONS_SHOWN],
        "can_move": has_role(request.user, ADMIN),
        "errors": errors,
        "notices": notices,
        "notices_shown": NOTICES_SHOWN,
        "can_retry": _can_retry(request, job),
    }
    return render(request, "dashboard/ingest_job.html", context)


def _can_retry(request: HttpRequest, job: IngestJob) -> bool:
    return ingest_job_retryable(job) and has_role(request.user, OPERATOR)


@require_POST
def ingest_job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    """Queue an upload again that was never queued (the broker was down) or that failed."""
    if not has_role(request.user, OPERATOR):
        raise PermissionDenied("Retrying an ingest needs the operator role.")
    job = get_object_or_404(IngestJob, pk=job_id)
    if ingest_job_requeue(job_id=job.pk):
        from dashboard.worker.tasks import (
            ingest_job_enqueue,  # the task layer (and Celery) loads on first use
        )

        transaction.on_commit(lambda: ingest_job_enqueue(job.pk))
    else:
        messages.error(request, f"Ingest #{job.pk} cannot be retried: it is {job.get_status_display()}.")
    return HttpResponseRedirect(job.get_absolute_url())
