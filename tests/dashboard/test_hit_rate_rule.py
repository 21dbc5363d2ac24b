"""Every figure of the hit rate follows the one rule of ``projections.hit_rate``.

Each case is one request's reported buckets (``None`` = not reported); the request row, the session
summary, the overview and the engine's usage record must all give the rule's answer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.apps import apps as django_apps
from django.test import Client
from django.urls import reverse

from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import Request, Session, Source
from dashboard.sessions.summaries import session_refresh_summary
from projections.hit_rate import hit_rate
from projections.normalized import Usage


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is a day after the requests these tests store."""
    wall_clock(datetime(2026, 1, 6, 9, tzinfo=UTC))


# (uncached, read, write 5m, write 1h, the rule's answer)
CASES = {
    "reads and writes": (300, 600, 60, 40, 0.6),
    "nothing reported about the cache": (1_000, None, None, None, None),
    "writes but no reads": (100, None, 400, None, 0.0),
    "reads but no writes": (100, 900, None, None, 0.9),
    "reported zeros, nothing to divide by": (0, 0, 0, 0, None),
    "no usage at all": (None, None, None, None, None),
}


Bucket = int | None


def _session_of(uncached: Bucket, read: Bucket, write_5m: Bucket, write_1h: Bucket) -> Session:
    source = Source.objects.create(name="farm")
    session = Session.objects.create(source=source, external_id="s1", format="dsh")
    Request.objects.create(
        session=session,
        ordinal=0,
        key="r0",
        provider="anthropic",
        model="claude-sonnet-4",
        started_at=datetime(2026, 1, 5, 9, tzinfo=UTC),
        uncached_input_tokens=uncached,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
    )
    session_refresh_summary(session)
    return session


@pytest.mark.parametrize("case", CASES)
def test_the_rule_gives_each_edge_case_its_answer(case: str) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    writes = None if write_5m is None and write_1h is None else (write_5m or 0) + (write_1h or 0)
    assert hit_rate(read=read, uncached=uncached, writes=writes) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_the_request_row_and_the_session_summary_agree_with_the_rule(case: str) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    session = _session_of(uncached, read, write_5m, write_1h)
    session.refresh_from_db()
    assert Request.objects.get(session=session).hit_rate == expected
    assert session.hit_rate == expected


@pytest.mark.parametrize("case", CASES)
def test_the_engines_usage_record_agrees_with_the_rule(case: str) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    usage = Usage(uncached, read, write_5m, write_1h, output=None, convention="anthropic")
    assert usage.hit_rate == expected


@pytest.mark.parametrize("case", CASES)
def test_the_overview_agrees_with_the_rule(case: str, viewer_client: Client) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    _session_of(uncached, read, write_5m, write_1h)
    rollups_rebuild()
    response = viewer_client.get(reverse("dashboard:overview"))
    assert response.context["totals"]["hit_rate"] == expected


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_the_migration_gives_sessions_stored_by_the_old_rule_the_rules_answer(case: str) -> None:
    uncached, read, write_5m, write_1h, expected = CASES[case]
    session = _session_of(uncached, read, write_5m, write_1h)
    # The old summaries left the rate null whenever no read was reported.
    old = None if read is None else expected
    Session.objects.filter(pk=session.pk).update(hit_rate=old)
    migration = importlib.import_module("dashboard.migrations.0011_session_hit_rate_writes_without_reads")
    migration.writes_without_reads_read_nothing(django_apps, None)
    session.refresh_from_db()
    assert session.hit_rate == expected
