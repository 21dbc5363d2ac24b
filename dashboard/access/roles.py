"""Roles as Django groups: viewer reads, operator uploads and re-folds, admin manages sources and users.

A higher role includes the lower ones; superusers hold every role. A signed-in user in no group
sees no data: every dashboard page answers 403 with the names of the admins to ask
(:class:`NoRoleNoDataMiddleware`). Admins manage users in Django's admin site, which lets in staff
only, so membership of ``admin`` sets ``is_staff`` (:mod:`dashboard.access.role_sync`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
DASHBOARD_NAMESPACE = "dashboard"
"""The URL namespace of the data pages and exports that the no-role check guards."""
ADMINS_NAMED = 5
"""Admins named on the no-role page: enough to reach one, few enough to read."""
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {role: rank for rank, role in enumerate(ROLES)}

View = TypeVar("View", bound=Callable[..., HttpResponse])


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    """Whether ``user`` holds ``role`` or a higher one."""
    if not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[union-attr]
    return any(_RANK[name] >= _RANK[role] for name in names if name in _RANK)


def role_required(role: str) -> Callable[[View], View]:
    """Refuse the view (403) to a signed-in user below ``role``; the login middleware handles the rest."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not has_role(request.user, role):
                raise PermissionDenied(f"This needs the {role} role.")
            return view(request, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def role_admin_names() -> list[str]:
    """User names of the active admins (superusers and ``admin`` members), for a user to ask."""
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    admins = get_user_model().objects.filter(Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True)
    return list(admins.distinct().order_by("username").values_list("username", flat=True)[:ADMINS_NAMED])


class NoRoleNoDataMiddleware:
    """Answer every dashboard page with 403 and whom to ask when the signed-in user holds no role.

    One check in front of every view, so a page added later is guarded without remembering to.
    Anonymous users are left to the login middleware, the token API and Django's admin to their own.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        match = request.resolver_match
        if match is None or match.namespace != DASHBOARD_NAMESPACE:
            return None
        if not request.user.is_authenticated or has_role(request.user, VIEWER):
            return None
        context = {"admins": role_admin_names()}
        return render(request, "no_role.html", context, status=403)
