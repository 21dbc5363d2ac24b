from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from dashboard.env import env_bool, env_int, env_str, env_url

ROOT = Path(__file__).resolve().parents[2]


def test_env_bool_refuses_a_word_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG")


def test_env_str_takes_a_blank_value_for_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHESCOPE_DATA_DIR", "  ")
    assert env_str("CACHESCOPE_DATA_DIR", "/srv/cachescope") == "/srv/cachescope"
    monkeypatch.setenv("CACHESCOPE_DATA_DIR", "/data")
    assert env_str("CACHESCOPE_DATA_DIR", "/srv/cachescope") == "/data"


def test_env_int_names_the_variable_of_a_bad_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHESCOPE_MAX_UPLOAD_BYTES", "lots")
    with pytest.raises(
        ImproperlyConfigured, match="CACHESCOPE_MAX_UPLOAD_BYTES='lots' is not a whole number"
    ):
        env_int("CACHESCOPE_MAX_UPLOAD_BYTES", 1)


def test_env_int_refuses_a_value_below_its_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECURE_HSTS_SECONDS", "-5")
    with pytest.raises(ImproperlyConfigured, match="must be at least 0"):
        env_int("SECURE_HSTS_SECONDS", 0)


def test_env_url_refuses_an_unsupported_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "kafka://somewhere")
    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL has scheme 'kafka'"):
        env_url("CELERY_BROKER_URL", {"redis", "amqp"})


def test_start_up_stops_on_a_bad_database_url_and_names_it(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": "mysql://root@localhost/x", "CACHESCOPE_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "DATABASE_URL has scheme 'mysql'" in result.stderr


def _printed_with_settings(code: str, env: dict[str, str]) -> list[str]:
    """The words ``code`` prints in a fresh interpreter started with the dashboard's settings and ``env``."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split()


def test_a_sqlite_database_url_gets_the_default_files_locking_options(tmp_path: Path) -> None:
    # Without IMMEDIATE, a worker on a DATABASE_URL'd SQLite file failed its ingest with "database is
    # locked" whenever its own lease heartbeat committed between the ingest's first read and write.
    env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}", "CACHESCOPE_DATA_DIR": str(tmp_path)}
    code = (
        "import django; django.setup(); from django.db import connection as c; "
        "o = c.settings_dict['OPTIONS']; c.ensure_connection(); "
        "print(o['transaction_mode'], o['timeout'], c.cursor().execute('PRAGMA journal_mode').fetchone()[0])"
    )
    assert _printed_with_settings(code, env) == ["IMMEDIATE", "20", "wal"]


def test_zero_configuration_runs_on_sqlite_with_in_process_tasks(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env["CACHESCOPE_DATA_DIR"] = str(tmp_path)
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER)"
    )
    assert _printed_with_settings(code, env) == ["django.db.backends.sqlite3", "True"]
    assert (tmp_path / "secret_key").exists()
