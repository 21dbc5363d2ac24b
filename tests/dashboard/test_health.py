"""``/healthz`` reports the database, the broker and the shared cache, each with its state, to
anyone; their errors and timings only with the health token. Each outage is a real one: a Redis of
the test's own stopped, a broker and a database on ports nothing listens on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.storage.shared_cache import OUTAGE
from tests.dashboard.outages import free_port, redis_server
from tests.dashboard.test_job_queueing import broker_down  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "health-token-for-the-monitor"


def _health(**headers: str) -> tuple[int, dict[str, Any]]:
    response = Client().get(reverse("healthz"), headers=headers)
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    return response.status_code, response.json()


def test_a_healthy_embedded_site_answers_ok_to_anyone_without_signing_in() -> None:
    assert _health() == (
        200,
        {"status": "ok", "checks": {"database": "ok", "broker": "not used", "cache": "not used"}},
    )


def test_the_health_token_adds_timings_and_a_wrong_one_adds_nothing(settings: Any) -> None:
    settings.CACHESCOPE_HEALTH_TOKEN = TOKEN
    _, plain = _health(Authorization="Bearer not-the-token")
    assert plain["checks"]["database"] == "ok"
    _, detailed = _health(Authorization=f"Bearer {TOKEN}")
    assert detailed["checks"]["database"]["state"] == "ok"
    assert detailed["checks"]["database"]["ms"] >= 0


def test_a_stopped_redis_is_a_degraded_site_and_the_token_says_why(tmp_path: Path, settings: Any) -> None:
    settings.CACHESCOPE_HEALTH_TOKEN = TOKEN
    with redis_server(tmp_path) as redis:
        settings.CACHES = {
            "default": {"BACKEND": "dashboard.storage.shared_cache.TolerantRedisCache", "LOCATION": redis.url}
        }
        assert _health()[1]["checks"]["cache"] == "ok"
        redis.stop()
        status, plain = _health()
        _, detailed = _health(Authorization=f"Bearer {TOKEN}")
    OUTAGE.reset()
    assert (status, plain["status"], plain["checks"]["cache"]) == (200, "degraded", "down")
    assert str(redis.port) not in json.dumps(plain)  # no host or port without the token
    assert "Connection refused" in detailed["checks"]["cache"]["error"]


def test_a_broker_that_does_not_answer_is_a_degraded_site(broker_down: Callable[[], None]) -> None:  # noqa: F811
    status, answer = _health()
    assert (status, answer["status"], answer["checks"]["broker"]) == (200, "degraded", "down")


def test_a_database_that_does_not_answer_is_503_without_a_server_error(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "CELERY_BROKER_URL")},
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/nothing",  # nothing listens there
        "CACHESCOPE_DATA_DIR": str(tmp_path),
        "CACHESCOPE_HEALTH_TOKEN": TOKEN,
    }
    code = (
        "from django.test.utils import setup_test_environment; setup_test_environment(); "
        "from django.test import Client; import json; "
        "r = Client().get('/healthz', headers={'Authorization': 'Bearer " + TOKEN + "'}); "
        "print(r.status_code, json.dumps(r.json()))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    status, answer = done.stdout.strip().splitlines()[-1].split(" ", 1)
    report = json.loads(answer)
    assert (status, report["status"], report["checks"]["database"]["state"]) == ("503", "down", "down")
    assert "Connection refused" in report["checks"]["database"]["error"]
