"""Roles end to end: a user in no group sees no data, and an admin manages users in /admin/."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from tests.dashboard.test_access import API, ROUTES, Route, url_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def roleless_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("newcomer", role=None))
    return client


@pytest.mark.parametrize("route", [r for r in ROUTES if r.name not in API], ids=str)
def test_a_user_in_no_group_gets_no_data_only_whom_to_ask(
    route: Route, roleless_client: Client, make_user: Callable[..., User]
) -> None:
    make_user("boss", role="admin")
    response = roleless_client.get(url_of(route))
    assert response.status_code == 403, f"{route}: a user with no role read it"
    page = response.content.decode()
    assert "no role yet" in page
    assert "boss" in page  # whom to ask


def test_a_user_in_no_group_is_told_so_even_when_no_admin_exists(roleless_client: Client) -> None:
    response = roleless_client.get(reverse("dashboard:sessions"))
    assert response.status_code == 403
    assert "createsuperuser" not in response.content.decode()
    assert "whoever runs this Cachescope" in response.content.decode()


def test_an_admin_group_member_who_is_not_staff_manages_users_in_the_admin(
    make_user: Callable[..., User],
) -> None:
    admin = make_user("root", role="admin")
    admin.refresh_from_db()
    assert admin.is_staff
    client = Client()
    client.force_login(admin)
    assert client.get("/admin/auth/user/").status_code == 200
    assert client.get("/admin/auth/user/add/").status_code == 200


def test_leaving_the_admin_group_takes_the_admin_site_away(make_user: Callable[..., User]) -> None:
    admin = make_user("root", role="admin")
    admin.groups.remove(Group.objects.get(name="admin"))
    admin.refresh_from_db()
    assert not admin.is_staff
    client = Client()
    client.force_login(admin)
    assert client.get("/admin/auth/user/").status_code == 302  # to the admin's own login


def test_a_viewer_or_operator_does_not_reach_the_admin(make_user: Callable[..., User]) -> None:
    for role in ("viewer", "operator"):
        user = make_user(role, role=role)
        user.refresh_from_db()
        assert not user.is_staff


def test_emptying_the_admin_group_takes_the_admin_site_from_its_members(
    make_user: Callable[..., User],
) -> None:
    admin = make_user("root", role="admin")
    Group.objects.get(name="admin").user_set.clear()
    admin.refresh_from_db()
    assert not admin.is_staff


def test_migrate_makes_staff_of_admins_added_before_the_sync_existed(make_user: Callable[..., User]) -> None:
    from dashboard.access.role_sync import role_grant_user_management

    earlier = make_user("earlier", role=None)
    admins = Group.objects.get_or_create(name="admin")[0]
    # Written straight to the join table, as rows from before the sync are: no signal fires.
    User.groups.through.objects.create(user=earlier, group=admins)
    earlier.refresh_from_db()
    assert not earlier.is_staff
    role_grant_user_management()
    earlier.refresh_from_db()
    assert earlier.is_staff
