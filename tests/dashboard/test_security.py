from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_pages_carry_a_self_only_content_security_policy(viewer_client: Client) -> None:
    response = viewer_client.get(reverse("dashboard:overview"))
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_correct_login_before_the_limit_gets_in(client: Client) -> None:
    User.objects.create_user("ana", password="the-right-password-123")
    client.post(reverse("login"), {"username": "ana", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "ana", "password": "the-right-password-123"})
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:overview")


def test_csrf_is_enforced_on_forms(make_user: object) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "x", "password": "y"})
    assert response.status_code == 403
