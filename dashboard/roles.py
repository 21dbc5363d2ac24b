"""Roles as Django groups: viewer reads, operator uploads and re-folds, admin manages sources and users.

A higher role includes the lower ones; superusers hold every role.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
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
