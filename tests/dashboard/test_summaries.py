"""A session's summary columns: those an ingest sums from the requests it wrote for a new session
are the ones read back from the stored requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session, Source
from dashboard.sessions.summaries import RequestSums, session_refresh_summary

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
SUMMARY = (
    "request_count",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "hit_rate",
    "models_used",
    "warning_count",
    "last_activity",
    "started_at",
)

# Each request's (uncached, read, write 5m, write 1h, output, minutes after T0 or None, model).
REQUEST_SETS = {
    "no requests": [],
    "every bucket reported": [(300, 600, 60, 40, 10, 0, "opus"), (5, 900, 0, 0, 7, 3, "haiku")],
    "a bucket reported by one request only": [
        (100, None, 400, None, 1, 2, "opus"),
        (50, 20, None, None, 2, 1, ""),
    ],
    "nothing about the cache": [(1_000, None, None, None, None, 5, "opus")],
    "no usage and no time": [(None, None, None, None, None, None, "opus")],
}


def summary_of(session: Session) -> dict[str, Any]:
    session.refresh_from_db()
    return {name: getattr(session, name) for name in SUMMARY}


@pytest.mark.parametrize("case", REQUEST_SETS)
def test_a_new_sessions_sums_of_the_requests_written_are_those_read_back(case: str) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="farm"), external_id="s1", format="dsh", started_at=None
    )
    rows = [
        Request(
            session=session,
            ordinal=n,
            key=f"r{n}",
            provider="anthropic",
            model=model,
            started_at=None if minutes is None else T0 + timedelta(minutes=minutes),
            uncached_input_tokens=uncached,
            cache_read_tokens=read,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            output_tokens=output,
        )
        for n, (uncached, read, write_5m, write_1h, output, minutes, model) in enumerate(REQUEST_SETS[case])
    ]
    Request.objects.bulk_create(rows)
    written = RequestSums()
    for row in rows:
        written.add(row)

    session_refresh_summary(session, events_added=0, new_requests=written)
    from_memory = summary_of(session)
    session_refresh_summary(session, events_added=0)
    assert from_memory == summary_of(session)


def test_every_ingested_session_has_the_summary_its_stored_rows_give(shared_data: Path) -> None:
    summary = ingest_paths(paths=[shared_data / "claude-code"], source_name="laptop")
    assert summary.sessions_added > 1
    assert summary.requests_added > 0
    for session in Session.objects.all():
        stored = summary_of(session)
        session_refresh_summary(session)
        assert stored == summary_of(session), session.external_id


def test_a_test_clock_dates_no_session_and_a_late_header_does_not_start_it_after_its_events(
    tmp_path: Path,
) -> None:
    from tests.dashboard.logs import BASE_MS, dsh_lines, write_jsonl

    # The harness's snapshots: createdAt 0 and a few events on a clock counting from the epoch.
    snapshot = dsh_lines("snapshot", turns=2)
    snapshot[0]["createdAt"] = 0
    snapshot[1]["time"] = 0
    snapshot[2]["time"] = 1
    # A fixed creation time later than every event of the log.
    late = dsh_lines("late-header", turns=2)
    late[0]["createdAt"] = BASE_MS + 3_600_000
    ingest_paths(
        paths=[
            write_jsonl(tmp_path / "a" / "session.jsonl", snapshot),
            write_jsonl(tmp_path / "b" / "session.jsonl", late),
        ],
        source_name="fleet",
    )
    first_wall_clock = datetime.fromtimestamp((BASE_MS + 2000) / 1000, tz=UTC)
    stored = Session.objects.get(external_id="snapshot")
    assert stored.started_at == first_wall_clock
    assert stored.last_activity is not None
    assert stored.last_activity > stored.started_at
    assert stored.events.order_by("seq").first().time is None  # a test clock's: kept as unknown
    late_session = Session.objects.get(external_id="late-header")
    assert late_session.started_at == datetime.fromtimestamp(BASE_MS / 1000, tz=UTC)
    assert late_session.started_at <= late_session.last_activity


@pytest.mark.parametrize("new", [True, False], ids=["ingest sums", "read back"])
def test_a_cache_sum_no_request_reported_is_stored_as_unknown_and_a_reported_0_as_0(new: bool) -> None:
    source = Source.objects.create(name="farm")
    figures = {}
    for name, (read, write_5m, write_1h) in {
        "deepseek": (None, None, None),
        "openai": (300, None, None),
        "zeros": (0, 0, None),
    }.items():
        session = Session.objects.create(source=source, external_id=name, format="dsh")
        row = Request.objects.create(
            session=session,
            ordinal=0,
            key=name,
            uncached_input_tokens=100,
            cache_read_tokens=read,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
        )
        sums = RequestSums()
        sums.add(row)
        session_refresh_summary(session, events_added=0, new_requests=sums if new else None)
        session.refresh_from_db()
        figures[name] = (session.cache_read_tokens, session.cache_write_tokens, session.prompt_tokens)

    assert figures == {"deepseek": (None, None, 100), "openai": (300, None, 400), "zeros": (0, 0, 100)}
