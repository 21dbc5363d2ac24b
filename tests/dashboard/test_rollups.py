"""The hourly and daily usage rollups equal the sums over the raw requests they cover, after an
ingest, a re-ingest of a grown log, a second session in the same hours, and a deletion."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError

from dashboard.fleet import rollups as rollups_service
from dashboard.fleet.rollups import rollups_rebuild, rollups_refresh_sessions
from dashboard.ingest import files as ingest_service
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, Session, UsageRollup
from tests.dashboard.logs import write_jsonl
from tests.dashboard.test_analysis import START, conversation, ingest_captures

pytestmark = pytest.mark.django_db

FIGURES = (
    "requests",
    "cache_reported",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
)


def raw_sums(granularity: str) -> dict[tuple[datetime, str, str], tuple[int, ...]]:
    """What every bucket should hold, summed in Python from the stored requests."""
    sums: dict[tuple[datetime, str, str], list[int]] = defaultdict(lambda: [0] * len(FIGURES))
    for call in Request.objects.select_related("session__source").exclude(started_at=None):
        start = call.started_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        if granularity == "day":
            start = start.replace(hour=0)
        row = sums[(start, call.session.source.name, call.model)]
        reported = call.cache_read_tokens is not None or call.cache_write_tokens is not None
        values = (1, int(reported), *(getattr(call, name) or 0 for name in FIGURES[2:]))
        for index, value in enumerate(values):
            row[index] += value
    return {key: tuple(values) for key, values in sums.items()}


def stored(granularity: str) -> dict[tuple[datetime, str, str], tuple[int, ...]]:
    rows = UsageRollup.objects.filter(granularity=granularity).select_related("source")
    return {
        (row.bucket_start.astimezone(UTC), row.source.name, row.model): tuple(
            getattr(row, n) for n in FIGURES
        )
        for row in rows
    }


def assert_rollups_match_the_requests() -> None:
    for granularity in ("hour", "day"):
        assert stored(granularity) == raw_sums(granularity), granularity


def spread(records: list[dict[str, Any]], first: datetime) -> list[dict[str, Any]]:
    """The conversation's calls an hour and then a day apart, so they land in different buckets."""
    for record, offset in zip(records, (timedelta(0), timedelta(hours=1), timedelta(days=1)), strict=True):
        record["started_at"] = (first + offset).isoformat()
    return records


def test_an_ingest_writes_the_hours_and_days_its_requests_fall_in(tmp_path: Path) -> None:
    ingest_captures(tmp_path, spread(conversation(), START))

    assert len(stored("hour")) == 3
    assert len(stored("day")) == 2
    assert_rollups_match_the_requests()


def test_a_grown_log_and_a_second_session_in_the_same_hours_add_up(tmp_path: Path) -> None:
    records = spread(conversation(), START)
    ingest_captures(tmp_path, records[:2])
    ingest_captures(tmp_path, records)  # the log grew by one call
    ingest_captures(tmp_path, spread(conversation(), START + timedelta(minutes=5)), name="other")

    assert Request.objects.count() == 6
    assert_rollups_match_the_requests()
    assert sum(row.requests for row in UsageRollup.objects.filter(granularity="hour")) == 6


def test_a_session_in_other_hours_of_the_same_days_adds_to_their_days(tmp_path: Path) -> None:
    ingest_captures(tmp_path, spread(conversation(), START))
    ingest_captures(tmp_path, spread(conversation(), START + timedelta(hours=3)), name="later")

    assert len(stored("hour")) == 6
    assert len(stored("day")) == 2
    assert_rollups_match_the_requests()


def test_ingesting_the_same_log_again_changes_nothing(tmp_path: Path) -> None:
    ingest_captures(tmp_path, spread(conversation(), START))
    before = stored("hour"), stored("day")

    ingest_captures(tmp_path, spread(conversation(), START))

    assert (stored("hour"), stored("day")) == before


def test_deleting_a_session_takes_its_requests_out_of_its_buckets(tmp_path: Path) -> None:
    ingest_captures(tmp_path, spread(conversation(), START))
    other = ingest_captures(tmp_path, spread(conversation(), START), name="other")

    other.delete()

    assert_rollups_match_the_requests()
    assert sum(row.requests for row in UsageRollup.objects.filter(granularity="day")) == 3
    Session.objects.all().delete()
    assert not UsageRollup.objects.exists()


def test_a_request_that_reported_no_cache_figure_leaves_the_bucket_without_a_hit_rate(
    tmp_path: Path,
) -> None:
    ingest_captures(tmp_path, spread(conversation(), START))
    Request.objects.update(cache_read_tokens=None, cache_write_5m_tokens=None, cache_write_1h_tokens=None)
    rollups_refresh_sessions(session_ids=Session.objects.values_list("pk", flat=True))

    assert_rollups_match_the_requests()
    assert {row.hit_rate for row in UsageRollup.objects.all()} == {None}


def test_the_backfill_command_rebuilds_rows_a_bulk_load_left_out(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, spread(conversation(), START))
    expected = stored("hour"), stored("day")
    UsageRollup.objects.all().delete()
    Request.objects.filter(session=session).update(model="claude-other")  # as a bulk load could leave it

    out = StringIO()
    call_command("rollups_backfill", stdout=out)

    assert_rollups_match_the_requests()
    assert stored("hour") != expected[0]
    assert "3 hour rows" in out.getvalue()
    assert rollups_rebuild() == 3


def test_an_untimed_request_is_in_no_bucket(tmp_path: Path) -> None:
    records = spread(conversation(), START)
    del records[2]["started_at"]
    path = write_jsonl(tmp_path / "capture.jsonl", records)

    ingest_paths(paths=[path], source_name="proxy", format="anthropic-capture")

    timed = Request.objects.exclude(started_at=None).count()
    assert sum(row.requests for row in UsageRollup.objects.filter(granularity="hour")) == timed
    assert_rollups_match_the_requests()


def test_hours_are_cut_in_utc_whatever_the_time_zone(tmp_path: Path, settings: Any) -> None:
    settings.TIME_ZONE = "America/New_York"
    ingest_captures(tmp_path, spread(conversation(), datetime(2026, 1, 5, 23, 30, tzinfo=UTC)))

    days = sorted(row.bucket_start.astimezone(UTC) for row in UsageRollup.objects.filter(granularity="day"))
    assert days == [datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 6, tzinfo=UTC)]
    assert_rollups_match_the_requests()


def folder_of_captures(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "captures"
    for minutes, name in enumerate(names):
        write_jsonl(folder / f"{name}.jsonl", spread(conversation(), START + timedelta(minutes=minutes)))
    return folder


def counted_refreshes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the refreshes of the rollups, each with the number of hours it recomputed."""
    refreshes: list[int] = []
    refresh = rollups_service.rollups_refresh

    def counting(*, buckets: dict[int, set[datetime]]) -> None:
        refreshes.append(sum(len(hours) for hours in buckets.values()))
        refresh(buckets=buckets)

    monkeypatch.setattr(rollups_service, "rollups_refresh", counting)
    return refreshes


def test_a_folders_sessions_refresh_their_buckets_once_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refreshes = counted_refreshes(monkeypatch)
    folder = folder_of_captures(tmp_path, "a", "b", "c")
    ingest_paths(paths=[folder], source_name="proxy", format="anthropic-capture")
    assert refreshes == [3]  # the three sessions' three hours, each once
    assert_rollups_match_the_requests()

    monkeypatch.setattr(ingest_service, "GROUP_SESSIONS", 2)
    refreshes.clear()
    ingest_paths(
        paths=[folder_of_captures(tmp_path / "later", "d", "e", "f")],
        source_name="proxy",
        format="anthropic-capture",
    )
    assert len(refreshes) == 2
    assert_rollups_match_the_requests()


def test_a_session_the_database_refuses_leaves_the_rest_of_its_group_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write = ingest_service.write_session

    def refuses_b(imported: Any, *args: Any, **kwargs: Any) -> Any:
        written = write(imported, *args, **kwargs)
        if imported.external_id == "b":
            raise IntegrityError("refused after its rows were written")
        return written

    monkeypatch.setattr(ingest_service, "write_session", refuses_b)
    summary = ingest_paths(
        paths=[folder_of_captures(tmp_path, "a", "b", "c")], source_name="proxy", format="anthropic-capture"
    )
    assert sorted(Session.objects.values_list("external_id", flat=True)) == ["a", "c"]
    assert [error.field for error in summary.errors] == ["session"]
    assert Request.objects.count() == 6
    assert_rollups_match_the_requests()
