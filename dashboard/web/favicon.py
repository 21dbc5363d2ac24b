"""``/favicon.ico``: browsers ask for it at the site root whatever the page's ``<link rel=icon>`` says."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.contrib.staticfiles import finders
from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

# The name never changes with the icon, unlike the hashed static names, so a week rather than a year.
FAVICON_MAX_AGE = 7 * 24 * 3600


@login_not_required
@require_safe
@cache_control(public=True, max_age=FAVICON_MAX_AGE)
def favicon(request: HttpRequest) -> FileResponse:
    path = finders.find("favicon.ico")
    if not isinstance(path, str):
        raise Http404("favicon.ico is missing from the static files")
    return FileResponse(open(path, "rb"), content_type="image/x-icon")
