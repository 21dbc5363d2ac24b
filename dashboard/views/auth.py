"""Login with a brake on password guessing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def _attempt_keys(request: HttpRequest) -> list[str]:
    address = request.META.get("REMOTE_ADDR", "unknown")
    username = str(request.POST.get("username", "")).strip().lower()[:150]
    return [f"login-fail:ip:{address}", f"login-fail:user:{username}"]


class RateLimitedLoginView(auth_views.LoginView):
    """Refuses further tries for a while after too many failures from one address or for one user."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        keys = _attempt_keys(request)
        limit = settings.CACHESCOPE_LOGIN_FAILURE_LIMIT
        if any((cache.get(key) or 0) >= limit for key in keys):
            minutes = settings.CACHESCOPE_LOGIN_LOCKOUT_SECONDS // 60
            context = {"reason": f"Too many failed logins. Try again in {minutes} minutes."}
            response = render(request, "403.html", context, status=429)
            response["Retry-After"] = str(settings.CACHESCOPE_LOGIN_LOCKOUT_SECONDS)
            return response
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:  # the form came back: the credentials were wrong
            for key in keys:
                cache.add(key, 0, settings.CACHESCOPE_LOGIN_LOCKOUT_SECONDS)
                cache.incr(key)
        return response
