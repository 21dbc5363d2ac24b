from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dashboard.ingest.recorded import ingest_recorded
from dashboard.ingest.recording.archive import Archive
from dashboard.ingest.recording.proxy import ProxyServer, ProxySettings, RecordingProxy
from dashboard.ingest.recording.recorder import Recorder, Store
from dashboard.ingest.recording.spool import Spool
from tests.dashboard.recording.fake_upstream import FakeUpstream

TIMEOUT = 10.0
"""Every socket a test opens gives up after this, so a broken proxy fails a test instead of hanging it."""


@dataclass
class Recording:
    """A running proxy in front of an upstream, with its recorder."""

    server: ProxyServer
    recorder: Recorder
    spool: Spool
    archive: Archive

    @property
    def port(self) -> int:
        return self.server.port

    def settle(self, calls: int) -> None:
        """Wait until the proxy has handed over ``calls`` calls and each is stored or spooled."""
        assert self.recorder.wait_idle(TIMEOUT, submitted=calls), "the recorder did not catch up"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(port: int, path: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    """POST ``body`` to the proxy on ``port`` and read the whole answer."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection.request(
            "POST", path, body=raw, headers={"content-type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def start_recording(tmp_path: Path) -> Iterator[Callable[..., Recording]]:
    """Start a proxy with ``ProxySettings(**settings)``; ``store`` replaces the storing step."""
    started: list[Recording] = []

    def start(*, store: Store = ingest_recorded, spool: Spool | None = None, **settings: Any) -> Recording:
        spool = spool or Spool(tmp_path / "record-spool")
        archive = Archive(tmp_path / "archive")
        recorder = Recorder(
            source_name="recorded", spool=spool, archive=archive, store=store, retry_seconds=0.1
        )
        recorder.start()
        server = ProxyServer(RecordingProxy(ProxySettings(**settings), recorder), "127.0.0.1", 0)
        recording = Recording(server=server, recorder=recorder, spool=spool, archive=archive)
        started.append(recording)
        server.start()
        return recording

    yield start
    for recording in started:
        recording.server.stop()
        recording.recorder.stop(timeout=TIMEOUT)
