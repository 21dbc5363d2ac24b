"""The projections page (keys, rows, re-fold runs) and a run's report with its live progress."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseStopPolling

from dashboard.access.roles import OPERATOR, has_role
from dashboard.models import FoldRun, FoldRunResult
from dashboard.refold.report import fold_run_report
from dashboard.refold.runs import RefoldError, RefoldUnderway, fold_run_create, fold_run_resume
from dashboard.refold.tally import VersionTally, projection_tallies
from dashboard.web.htmx import HtmxHttpRequest
from projections.folds.registry import defined_versions, live_versions

RUNS_LISTED = 20
REPORT_LISTED = 100
STALL_SECONDS = 60


class RefoldForm(forms.Form):
    """A re-fold is one key and two of its own state versions, picked as one choice.

    Offering each key's version pairs, rather than a key and two version lists, means the page
    never offers a version the key lacks or the same version twice; a hand-made POST that names
    one is still refused with the reason.
    """

    comparison = forms.CharField(label="Key and versions", widget=forms.Select)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["comparison"].widget.choices = refold_choices()  # type: ignore[attr-defined]

    def clean_comparison(self) -> tuple[str, int, int]:
        value = self.cleaned_data["comparison"]
        key, _, versions = value.partition(":")
        old, _, new = versions.partition(":")
        if key not in live_versions():
            raise forms.ValidationError(f"No projection key {key!r}; known: {', '.join(live_versions())}")
        if not (old.isdigit() and new.isdigit()):
            raise forms.ValidationError(f"{value!r} is not a key and two versions, as key:from:to")
        defined = defined_versions(key)
        for ver in (int(old), int(new)):
            if ver not in defined:
                raise forms.ValidationError(
                    f"{key} has no state version {ver}; defined: {', '.join(map(str, defined))}"
                )
        if old == new:
            raise forms.ValidationError("Choose two different versions to compare.")
        return key, int(old), int(new)


def refold_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Per key with more than one state version, every pair of its versions; the live one first."""
    groups = []
    for key, live in live_versions().items():
        defined = defined_versions(key)
        # Newest target first, then newest source: v7 → v8 (live) is the re-fold after an upgrade.
        pairs = sorted(
            ((old, new) for old in defined for new in defined if old != new),
            key=lambda pair: (pair[1] != live, -pair[1], -pair[0]),
        )
        if pairs:
            options = [
                (f"{key}:{old}:{new}", f"v{old} → v{new}{' (live)' if new == live else ''}")
                for old, new in pairs
            ]
            groups.append((key, options))
    return groups


def projection_keys() -> list[dict[str, Any]]:
    """Per key: its live and defined versions, and the rows stored under each version."""
    tallies = projection_tallies()
    keys = []
    for key, live in live_versions().items():
        defined = defined_versions(key)
        versions = []
        for ver in defined:
            tally = tallies.get((key, ver), VersionTally(rows=0, state_bytes=0, errors=0, last_fold=None))
            versions.append(
                {
                    "ver": ver,
                    "live": ver == live,
                    "rows": tally.rows,
                    "bytes": tally.state_bytes,
                    "errors": tally.errors,
                    "last_fold": tally.last_fold,
                }
            )
        stale = [tally for (known, ver), tally in tallies.items() if known == key and ver not in defined]
        keys.append(
            {
                "key": key,
                "live": live,
                "defined": defined,
                "versions": versions,
                "rows": sum(v["rows"] for v in versions) + sum(tally.rows for tally in stale),
                "bytes": sum(v["bytes"] for v in versions),
                "last_fold": max((v["last_fold"] for v in versions if v["last_fold"]), default=None),
            }
        )
    return keys


def _page_context(request: HttpRequest, form: RefoldForm | None = None) -> dict[str, Any]:
    return {
        "keys": projection_keys(),
        "runs": FoldRun.objects.select_related("created_by")[:RUNS_LISTED],
        "form": form or RefoldForm(),
        "refold_offered": bool(refold_choices()),
        "can_refold": has_role(request.user, OPERATOR),
    }


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def projection_list(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _start_run(request)
    template = "dashboard/projections.html" + ("#fold-runs" if request.htmx else "")
    return render(request, template, _page_context(request))


def _start_run(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, OPERATOR):
        raise PermissionDenied("Starting a re-fold needs the operator role.")
    form = RefoldForm(request.POST)
    if form.is_valid():
        key, from_version, to_version = form.cleaned_data["comparison"]
        try:
            run = fold_run_create(
                key=key, from_version=from_version, to_version=to_version, created_by=request.user
            )
        except RefoldUnderway as underway:
            # A second click, or another operator's: show the run already doing this work.
            messages.info(request, f"Re-fold #{underway.run.pk} of this comparison is under way already.")
            return redirect(underway.run)
        except RefoldError as error:
            form.add_error(None, str(error))
        else:
            from dashboard.worker.tasks import (
                refold_run_enqueue,  # the task layer (and Celery) loads on first use
            )

            # Sent once the run's row is committed; a broker that does not answer marks it not queued.
            transaction.on_commit(lambda: refold_run_enqueue(run.pk))
            return redirect(run)
    return render(request, "dashboard/projections.html", _page_context(request, form), status=400)


def fold_run_context(run: FoldRun) -> dict[str, Any]:
    """What the run page and its progress fragment show."""
    report = fold_run_report(run=run, limit=REPORT_LISTED)
    for result in report.divergences:
        result.event_url = _event_url(result)  # type: ignore[attr-defined]
    return {"run": run, "report": report, "stalled": _stalled(run)}


def _stalled(run: FoldRun) -> bool:
    """A failed run, or a running one no worker has advanced for a while: an operator may resume it."""
    if run.status in (FoldRun.Status.FAILED, FoldRun.Status.NOT_QUEUED):
        return True
    if run.status != FoldRun.Status.RUNNING:
        return False
    last = run.heartbeat_at or run.started_at
    return last is None or (timezone.now() - last).total_seconds() > STALL_SECONDS


def _event_url(result: FoldRunResult) -> str:
    return result.session.event_url(result.divergent_seq or 0)


@require_http_methods(["GET", "POST"])
def fold_run(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(FoldRun.objects.select_related("created_by"), pk=run_id)
    if request.method == "POST":
        if not has_role(request.user, OPERATOR):
            raise PermissionDenied("Resuming a re-fold needs the operator role.")
        try:
            fold_run_resume(run_id=run.pk)
        except RefoldError as error:
            messages.error(request, str(error))
        else:
            from dashboard.worker.tasks import (
                refold_run_enqueue,  # the task layer (and Celery) loads on first use
            )

            transaction.on_commit(lambda: refold_run_enqueue(run.pk, resume=True))
        return HttpResponseRedirect(run.get_absolute_url())
    context = {**fold_run_context(run), "can_refold": has_role(request.user, OPERATOR)}
    return render(request, "dashboard/fold_run.html", context)


@require_GET
def fold_run_progress_hx(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(FoldRun.objects.select_related("created_by"), pk=run_id)
    context = {**fold_run_context(run), "can_refold": has_role(request.user, OPERATOR)}
    response = render(request, "dashboard/fold_run.html#fold-run", context)
    if run.is_finished:
        return HttpResponseStopPolling(response.content)
    return response
