from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from projections.registry import defined_versions, live_versions


@require_GET
def projection_list(request: HttpRequest) -> HttpResponse:
    keys = [{"key": key, "live": ver, "defined": defined_versions(key)} for key, ver in live_versions().items()]
    return render(request, "dashboard/projections.html", {"keys": keys})


@require_GET
def fold_run(request: HttpRequest, run_id: int) -> HttpResponse:
    return render(request, "dashboard/projections.html", {"keys": []}, status=404)
