"""Production settings pass Django's deployment checks, and production never shows a debug page."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import path

ROOT = Path(__file__).resolve().parents[2]


def _production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # A production process inherits none of the test run's switches (the browser tests, for one,
    # allow the ORM beside Playwright's event loop).
    test_only = ("DEBUG", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if k not in test_only}
    env.pop("DATABASE_URL", None)
    env.update(
        SECRET_KEY=secrets.token_urlsafe(64),
        CACHESCOPE_TLS="1",
        CACHESCOPE_REQUIRE_SECRET_KEY="1",
        DEBUG="0",
        ALLOWED_HOSTS="example.com",
        CACHESCOPE_DATA_DIR=str(tmp_path),
    )
    env.update(extra)
    return env


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path: Path) -> None:
    done = _manage(_production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_fails_without_tls_so_the_clean_run_means_something(tmp_path: Path) -> None:
    done = _manage(
        _production_env(tmp_path, CACHESCOPE_TLS="0"), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert done.returncode != 0
    assert "security.W004" in done.stderr  # no HSTS
    assert "security.W012" in done.stderr  # session cookie not secure


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path: Path) -> None:
    env = _production_env(tmp_path)
    del env["SECRET_KEY"]
    done = _manage(env, "check")
    assert done.returncode != 0
    assert "SECRET_KEY is not set" in done.stderr


def test_debug_is_off_unless_asked_for(tmp_path: Path) -> None:
    env = _production_env(tmp_path)
    del env["DEBUG"]
    done = _manage(env, "shell", "-c", "from django.conf import settings; print(settings.DEBUG)")
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


@pytest.mark.django_db
def test_an_unknown_address_answers_the_plain_404_page_not_the_technical_one(viewer_client: Client) -> None:
    response = viewer_client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "There is nothing at this address." in body
    assert "URLconf" not in body
    assert "Django tried these URL patterns" not in body


def _explode(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret detail /etc/passwd")


urlpatterns = [path("boom/", _explode)]


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_answers_the_plain_500_page(viewer_client: Client) -> None:
    client = Client(raise_request_exception=False)
    client.cookies = viewer_client.cookies
    response = client.get("/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on the server" in body
    assert "secret detail" not in body
    assert "Traceback" not in body


def test_hsts_and_secure_cookies_are_sent_over_tls(tmp_path: Path) -> None:
    code = (
        "from django.test import Client; "
        "r = Client().get('/accounts/login/', secure=True, HTTP_HOST='example.com'); "
        "print(r.status_code, r.headers.get('X-Frame-Options'), r.cookies['csrftoken']['secure'], "
        "r.headers.get('Strict-Transport-Security'))"
    )
    done = _manage(_production_env(tmp_path), "shell", "-c", code)
    status, frame, secure, hsts = done.stdout.strip().splitlines()[-1].split(" ", 3)
    assert status == "200", done.stderr
    assert hsts.startswith("max-age=31536000")
    assert frame == "DENY"
    assert secure == "True"


def _hsts_header(tmp_path: Path, **extra: str) -> str:
    code = (
        "from django.test import Client; "
        "r = Client().get('/accounts/login/', secure=True, HTTP_HOST='example.com'); "
        "print(r.headers.get('Strict-Transport-Security'))"
    )
    done = _manage(_production_env(tmp_path, **extra), "shell", "-c", code)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_hsts_leaves_out_preload_unless_it_is_asked_for(tmp_path: Path) -> None:
    # Preload lists are hard to leave: a site joins them only on purpose.
    assert "preload" not in _hsts_header(tmp_path)
    assert "preload" in _hsts_header(tmp_path, CACHESCOPE_HSTS_PRELOAD="1")
