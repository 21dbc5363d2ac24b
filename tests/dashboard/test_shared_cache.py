"""With CACHE_URL on a Redis that goes down, pages compute without it, the login throttle counts in
the database, and the outage is logged at most once a minute (a real redis-server, stopped)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session
from dashboard.storage import shared_cache
from dashboard.storage.shared_cache import OUTAGE
from tests.dashboard.outages import RedisServer, redis_server

pytestmark = pytest.mark.django_db
PASSWORD = "the-right-password-123"


@pytest.fixture
def redis(tmp_path: Path, settings: Any) -> Iterator[RedisServer]:
    """The cache and the throttle on a Redis of the test's own, configured as CACHE_URL does."""
    with redis_server(tmp_path) as server:
        options = {"socket_connect_timeout": 1, "socket_timeout": 1}
        settings.CACHES = {
            "default": {
                "BACKEND": "dashboard.storage.shared_cache.TolerantRedisCache",
                "LOCATION": server.url,
                "OPTIONS": options,
            },
            "axes": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": server.url,
                "OPTIONS": options,
            },
        }
        settings.AXES_CACHE = "axes"
        settings.AXES_HANDLER = "dashboard.access.login_throttle.CacheOrDatabaseHandler"
        settings.AXES_FAILURE_LIMIT = 3
        AxesProxyHandler.get_implementation(force=True)
        OUTAGE.reset()
        yield server
    OUTAGE.reset()
    settings.AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
    AxesProxyHandler.get_implementation(force=True)


def _login(password: str) -> int:
    return Client().post(reverse("login"), {"username": "ana", "password": password}).status_code


def test_every_cached_page_answers_while_redis_is_down_and_the_outage_is_logged_once(
    redis: RedisServer, viewer_client: Client, dsh_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ingest_paths(paths=[dsh_log], source_name="laptop")
    session = Session.objects.get()
    pages = [
        reverse("dashboard:overview"),
        reverse("dashboard:sessions"),
        reverse("dashboard:session", args=[session.pk]),
        reverse("dashboard:requests"),
        reverse("dashboard:request", args=[Request.objects.first().pk]),  # type: ignore[union-attr]
    ]
    for page in pages:
        assert viewer_client.get(page).status_code == 200
    assert cache.get("active-sessions:probe", "missing") == "missing"
    cache.set("probe", 1)
    assert cache.get("probe") == 1  # the pages above ran with Redis answering

    redis.stop()
    with caplog.at_level(logging.WARNING, logger="dashboard.cache"):
        for _ in range(2):
            for page in pages:
                response = viewer_client.get(page)
                assert response.status_code == 200, page
        OUTAGE.reset()  # past the 5 s rest: Redis is asked again, and refuses again
        assert viewer_client.get(pages[0]).status_code == 200

    warnings = [record for record in caplog.records if record.name == "dashboard.cache"]
    assert len(warnings) == 2  # once, and once more after the reset; not once per read
    assert "the shared cache (CACHE_URL) is unreachable" in warnings[0].getMessage()
    assert cache.get("probe", "missing") == "missing"


def test_a_warning_goes_out_at_most_once_a_minute(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(shared_cache.time, "monotonic", lambda: clock[0])
    outage = shared_cache.CacheOutage()
    with caplog.at_level(logging.WARNING, logger="dashboard.cache"):
        for step in range(0, 180, 6):  # a failed call every 6 s for 3 minutes
            clock[0] = 1000.0 + step
            outage.failed("the page", ConnectionError("refused"))
    assert len(caplog.records) == 3
    assert outage.resting()
    clock[0] += shared_cache.RETRY_AFTER_SECONDS
    assert not outage.resting()


def test_the_throttle_locks_out_in_the_database_while_redis_is_down(redis: RedisServer) -> None:
    User.objects.create_user("ana", password=PASSWORD)
    redis.stop()

    assert [_login("wrong") for _ in range(3)] == [200, 200, 429]
    assert _login(PASSWORD) == 429  # locked out: the right password does not help
    assert AccessAttempt.objects.get(username="ana").failures_since_start >= 3


def test_a_lockout_counted_during_the_outage_still_holds_once_redis_is_back(redis: RedisServer) -> None:
    User.objects.create_user("ana", password=PASSWORD)
    redis.stop()
    assert [_login("wrong") for _ in range(3)] == [200, 200, 429]

    redis.start()
    OUTAGE.reset()
    assert _login(PASSWORD) == 429


def test_a_right_password_signs_in_while_redis_is_down_and_counts_in_redis_when_up(
    redis: RedisServer,
) -> None:
    User.objects.create_user("ana", password=PASSWORD)
    assert _login("wrong") == 200
    assert not AccessAttempt.objects.exists()  # counted in Redis while it answers

    redis.stop()
    assert _login(PASSWORD) == 302
