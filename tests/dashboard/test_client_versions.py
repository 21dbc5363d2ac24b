"""Client releases on the lists and the overview: filter sessions and requests by release, and the
hit rate of each release by the one rule, computed in one aggregate query."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.fleet.rollups import rollups_rebuild
from dashboard.fleet.usage import ClientVersionRow
from dashboard.models import Request, Session, Source
from projections.hit_rate import hit_rate

DAY = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is a day after the requests these tests store."""
    wall_clock(DAY + timedelta(days=1))


def fleet() -> None:
    """Three sessions: two of claude-code 2.1.9, one of 2.1.10 (whose hit rate fell), one unnamed."""
    source = Source.objects.create(name="farm")
    calls = {
        "old-a": ("claude-code 2.1.9", [(100, 900, 0), (50, 950, 0)]),
        "old-b": ("claude-code 2.1.9", [(200, 0, 800)]),
        "new": ("claude-code 2.1.10", [(1000, 0, 1000), (900, 100, 1000)]),
        "unnamed": ("", [(10, 10, 10)]),
    }
    for name, (version, usages) in calls.items():
        session = Session.objects.create(
            source=source, external_id=name, format="claude-code", client_version=version, started_at=DAY
        )
        for ordinal, (uncached, read, write) in enumerate(usages):
            Request.objects.create(
                session=session,
                ordinal=ordinal,
                key=f"{name}-{ordinal}",
                provider="anthropic",
                model="claude-sonnet-4",
                started_at=DAY,
                client_version=version,
                uncached_input_tokens=uncached,
                cache_read_tokens=read,
                cache_write_5m_tokens=write,
            )


@pytest.mark.django_db
def test_the_hit_rate_of_each_release_sums_its_requests_by_the_one_rule(viewer_client: Client) -> None:
    fleet()
    rollups_rebuild()

    rows = viewer_client.get(reverse("dashboard:overview")).context["client_versions"]

    assert rows == [
        ClientVersionRow(
            "claude-code 2.1.9",
            sessions=2,
            requests=3,
            prompt_tokens=100 + 900 + 50 + 950 + 200 + 800,
            hit_rate=hit_rate(read=1850, uncached=350, writes=800),
        ),
        ClientVersionRow(
            "claude-code 2.1.10",
            sessions=1,
            requests=2,
            prompt_tokens=1000 + 1000 + 900 + 100 + 1000,
            hit_rate=hit_rate(read=100, uncached=1900, writes=2000),
        ),
    ]
    assert rows[0].hit_rate == pytest.approx(1850 / 3000)
    assert rows[1].hit_rate == pytest.approx(100 / 4000)


@pytest.mark.django_db
def test_the_overview_shows_the_hit_rate_of_each_release(viewer_client: Client) -> None:
    fleet()
    rollups_rebuild()

    response = viewer_client.get(reverse("dashboard:overview"))

    assert [row.client_version for row in response.context["client_versions"]] == [
        "claude-code 2.1.9",
        "claude-code 2.1.10",
    ]
    html = response.content.decode()
    assert "Hit rate by client release" in html
    assert "?client_version=claude-code%202.1.10" in html


@pytest.mark.django_db
def test_the_sessions_list_filters_by_client_release(viewer_client: Client) -> None:
    fleet()

    response = viewer_client.get(reverse("dashboard:sessions"), {"client_version": "claude-code 2.1.9"})

    assert sorted(s.external_id for s in response.context["page"].rows) == ["old-a", "old-b"]
    assert response.context["client_versions"] == ["claude-code 2.1.9", "claude-code 2.1.10"]
    everything = viewer_client.get(reverse("dashboard:sessions")).context["page"].rows
    assert len(everything) == 4


@pytest.mark.django_db
def test_the_requests_list_filters_by_client_release(viewer_client: Client) -> None:
    fleet()

    response = viewer_client.get(reverse("dashboard:requests"), {"client_version": "claude-code 2.1.10"})

    assert sorted(call.key for call in response.context["page"]) == ["new-0", "new-1"]
    assert 'value="claude-code 2.1.10" selected' in response.content.decode()
    nothing = viewer_client.get(reverse("dashboard:requests"), {"client_version": "claude-code 9"})
    assert list(nothing.context["page"]) == []


@pytest.mark.django_db
def test_the_overview_counts_misses_by_the_provider_s_stated_reason(viewer_client: Client) -> None:
    fleet()
    Request.objects.filter(key__in=["new-0", "new-1"]).update(
        provider_miss_reason="system_changed", provider_missed_tokens=900
    )
    Request.objects.filter(key="old-b-0").update(provider_miss_reason="previous_message_not_found")
    Request.objects.filter(key="old-a-0").update(provider="openai", provider_miss_reason="cache_hit")
    rollups_rebuild()

    reasons = viewer_client.get(reverse("dashboard:overview")).context["provider_reasons"]

    assert reasons == [
        {"provider": "anthropic", "provider_miss_reason": "system_changed", "requests": 2, "missed": 1800},
        {
            "provider": "anthropic",
            "provider_miss_reason": "previous_message_not_found",
            "requests": 1,
            "missed": None,
        },
    ]
