"""The session page's context breakdown for every kind of log: stored figures, the series and the page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from dashboard.demo import write_demo_dataset
from dashboard.ingest.files import ingest_paths
from dashboard.models import Event, Request, Session
from dashboard.sessions import views as sessions_view
from dashboard.sessions.breakdown_series import series_cache_key, session_breakdown_series
from projections.normalized import EventRecord
from projections.providers.model_windows import CLAUDE_CODE_AUTO_COMPACT
from tests.dashboard.logs import dsh_lines, write_jsonl
from tests.dashboard.test_folds import T0, stored_session


@pytest.fixture
def demo_sessions(db: None, tmp_path: Path) -> dict[str, Session]:
    """One ingested claude-trace session and one Claude Code main session from the demo dataset."""
    manifest = write_demo_dataset(tmp_path)
    picked: dict[str, Session] = {}
    for log_format in ("claude-trace", "claude-code"):
        entry = next(e for e in manifest.files if e.format == log_format and "subagents" not in e.path)
        ingest_paths(paths=[tmp_path / entry.path], source_name="demo")
        picked[log_format] = Session.objects.filter(format=log_format).order_by("-id").first()
    return picked


def test_ingest_prices_each_captured_request_at_the_event_that_answers_it(
    demo_sessions: dict[str, Session],
) -> None:
    session = demo_sessions["claude-trace"]
    requests = list(Request.objects.filter(session=session).order_by("ordinal"))
    assert requests
    answering = dict(Event.objects.filter(session=session).values_list("seq", "type"))
    for request in requests:
        assert answering[request.event_seq] == "cache/request"
        assert request.message_tokens is not None
        assert request.context_window == 200_000
    main = [r for r in requests if r.lineage == "main"]
    assert main
    assert all(r.system_tokens and r.tools_tokens for r in main)


def test_ingest_leaves_a_transcript_s_request_unpriced_but_tied_to_its_reply(
    demo_sessions: dict[str, Session],
) -> None:
    session = demo_sessions["claude-code"]
    requests = list(Request.objects.filter(session=session))
    assert requests
    answering = dict(Event.objects.filter(session=session).values_list("seq", "type"))
    for request in requests:
        assert (request.system_tokens, request.tools_tokens, request.message_tokens) == (None, None, None)
        assert answering[request.event_seq] in ("assistant/message", "compaction/summary")


def test_a_capture_series_shows_its_requests_system_tools_window_and_auto_compact(
    demo_sessions: dict[str, Session],
) -> None:
    series = session_breakdown_series(session=demo_sessions["claude-trace"])
    now = series.now
    assert now is not None
    assert series.basis == "request body"
    assert now.system
    assert now.tools
    assert now.messages
    assert now.inferred is None
    assert now.window == 200_000
    assert series.auto_compact == CLAUDE_CODE_AUTO_COMPACT.threshold(200_000)
    assert series.last_provider is not None


def test_a_transcript_series_infers_system_and_tools_from_the_provider_prompt(
    demo_sessions: dict[str, Session],
) -> None:
    series = session_breakdown_series(session=demo_sessions["claude-code"])
    now = series.now
    assert now is not None
    assert series.basis == "usage"
    assert (now.system, now.tools) == (None, None)
    assert now.inferred is not None
    assert now.inferred > 0
    assert series.first_inferred == next(p.inferred for p in series.points if p.inferred is not None)
    calls = [p for p in series.points if p.provider is not None]
    assert calls
    # At each call the stack is the provider's prompt: the band is exactly what the messages leave.
    assert all(p.used >= p.provider for p in calls)


@pytest.mark.parametrize("log_format", ["claude-trace", "claude-code"])
def test_the_session_page_shows_tools_window_and_free_space(
    viewer_client: Client, demo_sessions: dict[str, Session], log_format: str
) -> None:
    session = demo_sessions[log_format]
    series = session_breakdown_series(session=session)
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    panel = page[
        page.index('aria-label="Context now"') : page.index("</dl>", page.index('aria-label="Context now"'))
    ]
    assert "Context window" in panel
    assert "Free space" in panel
    assert "Auto-compact at" in panel
    assert series.now is not None
    free = series.now.window - series.now.used
    assert f'title="{free}"' in panel
    figure = json.loads(page.split('id="breakdown-figure" type="application/json">')[1].split("</script>")[0])
    names = [trace["name"] for trace in figure["data"]]
    assert "messages" in names
    if log_format == "claude-trace":
        assert "<dt>Tools</dt>" in panel
        assert names[:2] == ["system", "tools"]
        assert "System prompt</dt>" in panel
    else:
        assert "System + tools" in panel
        assert "system + tools (inferred)" in names
        assert "System prompt</dt>" not in panel
    assert "provider-reported prompt" in names


def test_a_log_that_tells_nothing_about_its_context_says_why(viewer_client: Client, db: None) -> None:
    events = [
        EventRecord(seq=0, type="turn/start", time=T0, data={"turn": 1}),
        EventRecord(seq=1, type="turn/end", time=T0, data={"turn": 1}),
    ]
    session = stored_session(events, external_id="bookkeeping", event_count=2)
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert 'id="breakdown-empty"' in page
    assert "cannot be broken down" in page
    assert 'aria-label="Context now"' not in page


def test_the_chart_is_drawn_once_per_series_and_again_when_the_series_is_dropped(
    viewer_client: Client, demo_sessions: dict[str, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []
    draw = sessions_view.session_breakdown_chart

    def counting(series: Any) -> Any:
        drawn.append(series.events)
        return draw(series)

    monkeypatch.setattr(sessions_view, "session_breakdown_chart", counting)
    session = demo_sessions["claude-trace"]

    def breakdown_section() -> str:
        page = viewer_client.get(session.get_absolute_url()).content.decode()
        start = page.index('<section id="session-breakdown"')
        return page[start : page.index("</section>", start)]

    first = breakdown_section()
    assert 'id="breakdown-figure"' in first
    assert breakdown_section() == first
    assert len(drawn) == 1
    cache.delete(series_cache_key(session))  # as a backfill of the requests' context figures does
    assert breakdown_section() == first
    assert len(drawn) == 2


def test_the_window_use_reads_alike_in_the_panel_and_in_the_chart_s_note(
    viewer_client: Client, demo_sessions: dict[str, Session]
) -> None:
    page = viewer_client.get(demo_sessions["claude-code"].get_absolute_url()).content.decode()
    figure = json.loads(page.split('id="breakdown-figure" type="application/json">')[1].split("</script>")[0])
    (note,) = figure["layout"]["annotations"]
    shown = re.search(r'<span class="muted">\(([0-9.]+%) used\)</span>', page)

    assert shown is not None
    assert f"— {shown[1]} used" in note["text"]


def test_a_capture_session_s_bands_are_calibrated_to_the_provider_count_and_the_raw_estimate_shown(
    viewer_client: Client, demo_sessions: dict[str, Session]
) -> None:
    session = demo_sessions["claude-trace"]
    series = session_breakdown_series(session=session)
    counted = [point for point in series.points if point.provider is not None]
    assert counted
    for point in counted:
        assert point.used == point.provider
        assert point.calibration == "provider count"
        assert point.raw is not None
    assert any(point.raw != point.provider for point in counted)
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "calibrated to the provider's count; raw estimate" in page
    assert 'id="breakdown-shortfall"' not in page
    figure = json.loads(page.split('id="breakdown-figure" type="application/json">')[1].split("</script>")[0])
    (raw,) = [trace for trace in figure["data"] if trace["name"] == "raw estimate (4 characters per token)"]
    assert [value for value in raw["y"] if value is not None] == [p.raw for p in series.points if p.raw]


def test_a_folded_log_far_short_of_the_provider_count_flags_the_gap_rather_than_call_it_the_context(
    viewer_client: Client, db: None, tmp_path: Path
) -> None:
    # The log's own figures are a short system prompt and four lines; its calls report 1,000+ tokens.
    path = write_jsonl(tmp_path / "short" / "session.jsonl", dsh_lines("short", turns=2))
    ingest_paths(paths=[path], source_name="laptop")
    session = Session.objects.get(external_id="short")
    series = session_breakdown_series(session=session)
    assert series.basis == "log"
    assert series.shortfall is not None
    assert series.shortfall.reported == series.last_provider
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    start = page.index('id="breakdown-shortfall"')
    flag = page[start : page.index("</p>", start)]
    assert "fall far short of the provider's count" in flag
    assert f'title="{series.shortfall.missing}"' in flag
    assert "<dt>In context</dt>" not in page
    assert "In the log's figures" in page
    assert "calibrated to the provider's count" not in page
