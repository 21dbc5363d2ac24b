from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboard.access.tokens import PREFIX_LENGTH, token_authenticate, token_create, token_revoke
from dashboard.models import ApiToken, ModelPrice, Source

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def admin_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("root", "admin"))
    return client


def _token(name: str = "host-1") -> tuple[ApiToken, str]:
    source, _ = Source.objects.get_or_create(name="farm")
    return token_create(source=source, name=name, created_by=None)


def test_a_new_token_keeps_only_the_hash_and_prefix_of_its_secret() -> None:
    token, secret = _token()
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.hash == hashlib.sha256(secret.encode()).hexdigest()
    assert stored.prefix == secret[:PREFIX_LENGTH]
    assert secret not in repr(ApiToken.objects.values().get(pk=token.pk))


def test_a_secret_finds_its_token_and_records_its_use() -> None:
    token, secret = _token()
    found = token_authenticate(secret=secret, now=NOW)
    assert found == token
    assert ApiToken.objects.get(pk=token.pk).last_used_at == NOW


def test_last_use_is_written_at_most_once_a_minute() -> None:
    _token_row, secret = _token()
    token_authenticate(secret=secret, now=NOW)
    token_authenticate(secret=secret, now=NOW + timedelta(seconds=30))
    assert ApiToken.objects.get().last_used_at == NOW
    token_authenticate(secret=secret, now=NOW + timedelta(minutes=2))
    assert ApiToken.objects.get().last_used_at == NOW + timedelta(minutes=2)


@pytest.mark.parametrize("tamper", ["x", "", "csk_short"])
def test_a_wrong_secret_with_or_without_the_right_prefix_is_refused(tamper: str) -> None:
    _token_row, secret = _token()
    presented = secret[:-1] + ("A" if secret[-1] != "A" else "B") if tamper == "x" else tamper
    assert token_authenticate(secret=presented, now=NOW) is None


def test_a_revoked_token_no_longer_authenticates() -> None:
    token, secret = _token()
    assert token_revoke(token=token, now=NOW)
    assert not token_revoke(token=token, now=NOW)
    assert token_authenticate(secret=secret, now=NOW) is None


def test_two_tokens_of_a_source_are_told_apart() -> None:
    first, first_secret = _token("a")
    second, second_secret = _token("b")
    assert token_authenticate(secret=first_secret, now=NOW) == first
    assert token_authenticate(secret=second_secret, now=NOW) == second


def test_the_admin_page_shows_a_new_secret_once(admin_client: Client) -> None:
    response = admin_client.post(reverse("dashboard:tokens"), {"source": "new-farm", "name": "host-9"})
    assert response.status_code == 200
    secret = response.context["secret"]
    assert secret.encode() in response.content
    assert response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get()
    assert token.source.name == "new-farm"
    assert token.created_by is not None
    assert token.created_by.username == "root"
    listing = admin_client.get(reverse("dashboard:tokens"))
    assert secret.encode() not in listing.content
    assert token.prefix.encode() in listing.content


def test_the_admin_page_refuses_a_token_without_a_name(admin_client: Client) -> None:
    response = admin_client.post(reverse("dashboard:tokens"), {"source": "farm", "name": ""})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_the_admin_page_revokes_a_token(admin_client: Client) -> None:
    token, _ = _token()
    response = admin_client.post(reverse("dashboard:token_revoke", args=[token.pk]))
    assert response.status_code == 302
    assert ApiToken.objects.get().revoked_at is not None
    assert b"revoked" in admin_client.get(reverse("dashboard:tokens")).content


def test_operators_cannot_create_or_revoke_tokens(operator_client: Client) -> None:
    token, _ = _token()
    assert operator_client.get(reverse("dashboard:tokens")).status_code == 403
    assert operator_client.post(reverse("dashboard:tokens"), {"source": "x", "name": "y"}).status_code == 403
    assert operator_client.post(reverse("dashboard:token_revoke", args=[token.pk])).status_code == 403
    assert ApiToken.objects.get().revoked_at is None
    assert ApiToken.objects.count() == 1


def test_the_admin_pages_show_in_the_admin_menu_to_admins_only(
    admin_client: Client, viewer_client: Client
) -> None:
    link = f'href="{reverse("dashboard:tokens")}"'.encode()
    assert link in admin_client.get(reverse("dashboard:sessions")).content
    assert link not in viewer_client.get(reverse("dashboard:sessions")).content


def test_admins_edit_the_price_table(admin_client: Client) -> None:
    data = {
        "pattern": "house-model",
        "provider": "house",
        "input": "2",
        "cache_write_5m": "2.5",
        "cache_write_1h": "4",
        "cache_read": "0.2",
        "output": "10",
        "source_url": "https://example.com/prices",
        "read_on": "2026-12-01",
    }
    assert admin_client.post(reverse("dashboard:prices"), data).status_code == 302
    price = ModelPrice.objects.get(pattern="house-model")
    assert price.updated_by is not None
    response = admin_client.post(reverse("dashboard:price_edit", args=[price.pk]), {**data, "output": "12"})
    assert response.status_code == 302
    price.refresh_from_db()
    assert str(price.output) == "12.000000"
    bad = admin_client.post(reverse("dashboard:price_edit", args=[price.pk]), {**data, "input": "-1"})
    assert bad.status_code == 400
    assert admin_client.post(reverse("dashboard:price_delete", args=[price.pk])).status_code == 302
    assert not ModelPrice.objects.filter(pattern="house-model").exists()
