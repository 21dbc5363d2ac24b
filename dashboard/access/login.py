"""What a locked-out login answers (the throttle itself is django-axes, configured in settings)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def login_locked_out(request: HttpRequest, *args: Any) -> HttpResponse:
    """429 with a plain reason and ``Retry-After``: too many failures for this user name from here."""
    seconds = settings.CACHESCOPE_LOGIN_LOCKOUT_SECONDS
    minutes = max(1, seconds // 60)
    context = {"reason": f"Too many failed logins. Try again in {minutes} minutes."}
    response = render(request, "403.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
