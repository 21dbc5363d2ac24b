"""Login throttling: failures counted per user name and client address, in state every process shares."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from dashboard.access.client_address import client_address

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "the-right-password-123"
PROXY = "10.0.0.9"


@pytest.fixture
def ana() -> User:
    return User.objects.create_user("ana", password=PASSWORD)


@pytest.fixture
def limit(settings: object) -> int:
    settings.AXES_FAILURE_LIMIT = 3  # type: ignore[attr-defined]
    return 3


def _login(username: str, password: str, **meta: str) -> int:
    return Client(**meta).post(reverse("login"), {"username": username, "password": password}).status_code


def test_login_refuses_a_user_name_after_too_many_failures_from_one_address(ana: User, limit: int) -> None:
    client = Client(REMOTE_ADDR="203.0.113.5")
    for _ in range(limit - 1):
        assert client.post(reverse("login"), {"username": "ana", "password": "wrong"}).status_code == 200
    # The failure that reaches the limit is the first one refused.
    assert client.post(reverse("login"), {"username": "ana", "password": "wrong"}).status_code == 429
    blocked = client.post(reverse("login"), {"username": "ana", "password": PASSWORD})
    assert blocked.status_code == 429
    assert "Too many failed logins" in blocked.content.decode()
    assert int(blocked["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session


def test_random_user_names_from_one_address_do_not_lock_that_address_out(ana: User, limit: int) -> None:
    for _ in range(10 * limit):
        assert _login(uuid.uuid4().hex, "wrong", REMOTE_ADDR="203.0.113.5") == 200
    assert _login("ana", PASSWORD, REMOTE_ADDR="203.0.113.5") == 302


def test_a_locked_user_name_still_signs_in_from_another_address(ana: User, limit: int) -> None:
    for _ in range(limit):
        _login("ana", "wrong", REMOTE_ADDR="203.0.113.5")
    assert _login("ana", PASSWORD, REMOTE_ADDR="203.0.113.5") == 429
    assert _login("ana", PASSWORD, REMOTE_ADDR="198.51.100.7") == 302


def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_apart(
    ana: User, limit: int, settings: object
) -> None:
    settings.CACHESCOPE_TRUSTED_PROXIES = [PROXY]  # type: ignore[attr-defined]
    for _ in range(limit):
        _login("ana", "wrong", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert _login("ana", PASSWORD, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.5") == 429
    assert _login("ana", PASSWORD, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="198.51.100.7") == 302


def test_a_forged_forwarded_header_from_an_untrusted_address_changes_nothing(ana: User, limit: int) -> None:
    for attempt in range(limit):
        _login("ana", "wrong", REMOTE_ADDR="203.0.113.5", HTTP_X_FORWARDED_FOR=f"192.0.2.{attempt}")
    assert _login("ana", PASSWORD, REMOTE_ADDR="203.0.113.5", HTTP_X_FORWARDED_FOR="192.0.2.99") == 429


def test_failures_are_counted_in_the_database_that_every_worker_shares(ana: User, limit: int) -> None:
    for _ in range(2):
        _login("ana", "wrong", REMOTE_ADDR="203.0.113.5")
    attempt = AccessAttempt.objects.get(username="ana", ip_address="203.0.113.5")
    assert attempt.failures_since_start == 2


def test_the_client_address_is_the_last_one_no_trusted_proxy_added(settings: object) -> None:
    settings.CACHESCOPE_TRUSTED_PROXIES = ["10.0.0.0/8"]  # type: ignore[attr-defined]
    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="192.0.2.1, 203.0.113.5, 10.0.0.7"
    )
    assert client_address(request) == "203.0.113.5"  # 192.0.2.1 is whatever the client claimed


def test_the_client_address_ignores_a_forwarded_value_that_is_not_an_address(settings: object) -> None:
    settings.CACHESCOPE_TRUSTED_PROXIES = [PROXY]  # type: ignore[attr-defined]
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="not-an-address")
    assert client_address(request) == PROXY


def _setting(name: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL")}
    code = f"from django.conf import settings; print(settings.{name})"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_throttle_keeps_its_state_in_redis_when_the_cache_is_redis(tmp_path: Path) -> None:
    assert _setting("AXES_HANDLER", CACHESCOPE_DATA_DIR=str(tmp_path)).endswith("AxesDatabaseHandler")
    redis = _setting("AXES_HANDLER", CACHESCOPE_DATA_DIR=str(tmp_path), CACHE_URL="redis://127.0.0.1:6379/3")
    assert redis.endswith("CacheOrDatabaseHandler")


def test_a_trusted_proxy_that_is_not_an_address_stops_the_start(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**clean, "CACHESCOPE_DATA_DIR": str(tmp_path), "CACHESCOPE_TRUSTED_PROXIES": "10.0.0.1,proxy"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "CACHESCOPE_TRUSTED_PROXIES" in done.stderr
    assert "'proxy'" in done.stderr
