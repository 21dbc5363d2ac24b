"""Keep Django's staff flag and the admin role's permissions in step with the ``admin`` group.

Django's admin site lets in staff only, and shows a staff user only what their permissions allow.
An admin manages users there, so joining ``admin`` makes a user staff and leaving it (unless a
superuser) takes that away, and the ``admin`` group holds the permissions on users and groups.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models.signals import m2m_changed, post_migrate

from dashboard.access.roles import ADMIN

USER_MANAGEMENT_MODELS = ("user", "group")
"""The ``auth`` models an admin manages: who may sign in, and with which role."""


def role_sync_staff(user: Any) -> None:
    """Set ``user.is_staff`` from their membership of ``admin`` (superusers stay staff)."""
    staff = user.is_superuser or user.groups.filter(name=ADMIN).exists()
    if user.is_staff != staff:
        get_user_model().objects.filter(pk=user.pk).update(is_staff=staff)
        user.is_staff = staff


def role_grant_user_management(**_: Any) -> None:
    """Give the ``admin`` group every permission on users and groups, and make its members staff
    (after each ``migrate``: members added before this sync existed get the admin site too)."""
    group, _created = Group.objects.get_or_create(name=ADMIN)
    get_user_model().objects.filter(groups=group, is_staff=False).update(is_staff=True)
    permissions = Permission.objects.filter(
        content_type__app_label="auth", content_type__model__in=USER_MANAGEMENT_MODELS
    )
    group.permissions.add(*permissions)


def _groups_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **_: Any) -> None:
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if reverse:  # a group's members changed: ``instance`` is the group
        if instance.name != ADMIN:
            return
        # A clear names no one, so every staff user is checked again.
        everyone = get_user_model().objects
        users = everyone.filter(pk__in=pk_set) if pk_set else everyone.filter(is_staff=True)
        for user in users:
            role_sync_staff(user)
        return
    role_sync_staff(instance)


def connect() -> None:
    """Connect the receivers; called once from the app's ``ready``."""
    m2m_changed.connect(
        _groups_changed, sender=get_user_model().groups.through, dispatch_uid="role_sync_groups"
    )
    # After the dashboard's own migrations, by when ``auth`` has created its permissions.
    post_migrate.connect(
        role_grant_user_management,
        sender=apps.get_app_config("dashboard"),
        dispatch_uid="role_sync_permissions",
    )
