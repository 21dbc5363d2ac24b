"""A long export served by gunicorn with the dashboard's own settings (``dashboard/gunicorn_conf.py``)
ends whole, where gunicorn's default sync worker is killed at its timeout and the download ends cut
off with a 200. Real gunicorn processes over the test database, read by a slow client."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client

from dashboard.models import Request, Session, Source

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
ROWS = 24_000
"""About 11 MB of JSON: more than the kernel's socket buffers hold, so the server is still writing."""
TIMEOUT = 1
"""gunicorn's worker timeout, in seconds: the slow client keeps the export going for longer."""

pytestmark = pytest.mark.django_db(transaction=True)


def _database_url() -> str:
    options = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"postgres://{options['USER']}@{options['HOST']}:{options['PORT'] or 5432}/{options['NAME']}"
    return f"sqlite:///{options['NAME']}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _gunicorn(*extra: str) -> Iterator[int]:
    """gunicorn serving the dashboard with its settings and ``extra`` flags; its port."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "CELERY_BROKER_URL")}
    # The same data folder as the tests (its secret key signs the session cookie), the test database.
    env.update(DATABASE_URL=_database_url(), CACHESCOPE_DATA_DIR=str(settings.DATA_DIR), LOG_LEVEL="ERROR")
    command = [str(GUNICORN), "dashboard.wsgi", "-c", "python:dashboard.gunicorn_conf"]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", str(TIMEOUT), *extra]
    log = Path(tempfile.mkdtemp()) / "gunicorn.log"
    with log.open("w") as output:  # the child keeps its own copy
        server = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=output, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"gunicorn did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _read_slowly(port: int, path: str, cookie: str) -> tuple[dict[str, str], bytes]:
    """GET ``path`` over HTTP/1.0 with a small receive window, reading a little at a time as a slow
    link would, so the server is still sending well after its timeout; the headers and the body."""
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        client.settimeout(60)
        client.connect(("127.0.0.1", port))
        client.sendall(
            f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nCookie: sessionid={cookie}\r\n\r\n".encode()
        )
        received = bytearray()
        while chunk := client.recv(32 * 1024):  # about 1.6 MB a second at most
            received += chunk
            time.sleep(0.02)
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    headers["status"] = status
    return headers, body


@pytest.fixture
def viewer_cookie() -> str:
    user = User.objects.create_user(username="viewer-user", password="a-long-test-password")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def many_requests() -> int:
    session = Session.objects.create(source=Source.objects.create(name="farm"), external_id="s", format="dsh")
    Request.objects.bulk_create(
        (
            Request(
                session=session,
                ordinal=n,
                key=f"r{n}",
                provider="anthropic",
                model="claude-sonnet-4-20250514",
                uncached_input_tokens=10,
                cache_read_tokens=1_000,
                cache_write_5m_tokens=20,
            )
            for n in range(ROWS)
        ),
        batch_size=2_000,
    )
    return ROWS


def test_a_slow_export_ends_whole_with_the_dashboards_settings_where_a_sync_worker_cuts_it(
    viewer_cookie: str, many_requests: int
) -> None:
    with _gunicorn() as port:
        headers, body = _read_slowly(port, "/requests/export.json", viewer_cookie)

    assert headers["status"].endswith("200 OK")
    rows = json.loads(body)
    assert len(rows) == int(headers["x-cachescope-rows"]) == many_requests

    # The control, which shows the slow client outlasts the timeout: gunicorn's default worker
    # class, as a plain `gunicorn dashboard.wsgi` runs, is killed mid-stream with a 200 sent.
    with _gunicorn("--worker-class", "sync", "--threads", "1") as port:
        headers, body = _read_slowly(port, "/requests/export.json", viewer_cookie)

    assert headers["status"].endswith("200 OK")
    assert int(headers["x-cachescope-rows"]) == many_requests  # what a client checks a download by
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)  # cut off mid-array
    assert body.count(b'"request_id"') < many_requests
