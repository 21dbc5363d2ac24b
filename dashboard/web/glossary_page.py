"""The glossary: every term of art the pages use, and what each miss label means."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.web.glossary import TERMS
from projections.cache.explain.verdict import LABEL_MEANINGS, LABEL_REMEDIES


@require_GET
def glossary(request: HttpRequest) -> HttpResponse:
    labels = [
        {"label": label, "meaning": meaning, "remedy": LABEL_REMEDIES.get(label, "")}
        for label, meaning in LABEL_MEANINGS.items()
    ]
    terms = sorted(TERMS, key=lambda term: term.name)
    return render(request, "dashboard/glossary.html", {"terms": terms, "labels": labels})
