"""Watching a session while it is recorded: the page's live panel shows each new call on its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.ingest.recording.proxy import ProxyServer, ProxySettings, RecordingProxy
from dashboard.ingest.recording.recorder import Recorder
from dashboard.ingest.recording.spool import Spool
from dashboard.models import Session
from tests.dashboard.recording.conftest import TIMEOUT, call
from tests.dashboard.recording.fake_upstream import FakeUpstream

pytestmark = pytest.mark.e2e


@pytest.fixture
def recording(tmp_path: Path, transactional_db: None) -> Iterator[tuple[ProxyServer, Recorder]]:
    upstream = FakeUpstream().start()
    recorder = Recorder(source_name="laptop", spool=Spool(tmp_path / "spool"), retry_seconds=0.1)
    recorder.start()
    server = ProxyServer(RecordingProxy(ProxySettings(upstream=upstream.url), recorder), "127.0.0.1", 0)
    server.start()
    yield server, recorder
    server.stop()
    recorder.stop(timeout=TIMEOUT)
    upstream.stop()


def test_a_recorded_sessions_page_shows_its_next_call_without_a_reload(
    live_server: Any, page: Any, login_as: Any, recording: tuple[ProxyServer, Recorder], screenshot: Any
) -> None:
    server, recorder = recording
    first = {"model": "claude-sonnet-4-5-20250929", "messages": [{"role": "user", "content": "plan"}]}
    assert call(server.port, "/v1/messages", first).status == 200
    assert recorder.wait_idle(TIMEOUT, submitted=1)
    session = Session.objects.get(source__name="laptop")
    login_as("viewer")
    page.goto(live_server.url + session.get_absolute_url())
    live = page.locator("#session-live")
    expect(live).to_contain_text("Calls are arriving")
    expect(live.locator("tbody tr")).to_have_count(1)

    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "ok"}]}
    assert call(server.port, "/v1/messages", second).status == 200
    # The panel polls every 5 s: the second call shows within two polls, with no reload.
    expect(live.locator("tbody tr")).to_have_count(2, timeout=12_000)
    screenshot("live-panel")
