"""The demo dataset, ingested whole, against the manifest its generator wrote."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.demo import DemoManifest, write_demo_dataset
from dashboard.ingest.files import ingest_paths
from dashboard.models import ProjcacheCheck, ProjectionRow, Request, Session, Warning

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path: Path, django_capture_on_commit_callbacks: Any) -> DemoManifest:
    manifest = write_demo_dataset(tmp_path)
    for source in manifest.sources:
        with django_capture_on_commit_callbacks(execute=True):  # folds and analyses run on commit
            summary = ingest_paths(paths=[tmp_path / source], source_name=source)
        assert summary.errors == [], summary.errors
    return manifest


def test_every_demo_session_lands_with_the_figures_its_manifest_states(demo: DemoManifest) -> None:
    assert len(demo.sessions) >= 30
    assert len(demo.sources) == 3
    for expected in demo.sessions:
        session = Session.objects.get(external_id=expected.external_id)
        assert session.request_count == expected.requests, expected.external_id
        usage = expected.usage
        assert session.uncached_input_tokens == (usage.uncached_input or 0), expected.external_id
        # Unknown where the provider reported no such figure, as the manifest states it.
        assert session.cache_read_tokens == usage.cache_read, expected.external_id
        assert session.cache_write_tokens == usage.cache_write, expected.external_id
        assert session.output_tokens == (usage.output or 0), expected.external_id
        if expected.events is not None:
            assert session.event_count == expected.events, expected.external_id
        if expected.parent_external_id:
            assert session.parent is not None, expected.external_id
            assert session.parent.external_id == expected.parent_external_id


def test_the_demo_spans_six_weeks_so_the_overview_opens_on_a_month_of_days_with_and_without_work(
    demo: DemoManifest, viewer_client: Client, wall_clock: Callable[[datetime], None]
) -> None:
    times = list(Request.objects.exclude(started_at=None).values_list("started_at", flat=True))
    days = {moment.date() for moment in times}
    assert (max(days) - min(days)).days >= 35
    assert len(days) >= 20

    wall_clock(max(times) + timedelta(hours=1))  # the day the demo's last session ran
    response = viewer_client.get(reverse("dashboard:overview"))

    assert response.context["window"].step == "day"
    [line] = response.context["fleet_hit_rate_chart"]["data"]
    worked = [rate for rate in line["y"] if rate is not None]
    assert 10 <= len(worked) < len(line["y"]) == 30  # days with work, and gaps between them
    assert len({round(rate, 2) for rate in worked}) > 3  # the hit rate moves from day to day


def test_the_demo_opened_long_after_it_ran_says_every_session_lies_before_the_range(
    demo: DemoManifest, viewer_client: Client, wall_clock: Callable[[datetime], None]
) -> None:
    newest = max(Request.objects.exclude(started_at=None).values_list("started_at", flat=True))
    wall_clock(newest + timedelta(days=400))

    response = viewer_client.get(reverse("dashboard:overview"))

    outside = response.context["outside"]
    assert (outside.sessions, outside.wider) == (Session.objects.count(), "all")
    assert (
        f"{outside.sessions} stored sessions lie outside this range: show all time"
        in response.content.decode()
    )


def test_the_demo_breakdown_rows_match_each_dsh_logs_final_surface_but_for_the_documented_drift(
    demo: DemoManifest,
) -> None:
    dsh = [s for s in demo.sessions if s.surface]
    assert dsh
    drifting = 0
    for expected in dsh:
        row = ProjectionRow.objects.get(session__external_id=expected.external_id, key="contextBreakdown")
        assert row.view is not None
        if expected.format_version == "0":
            # A header-era log has no system prompt on the surface: the live version takes the
            # newest request/header's.
            assert expected.surface["systemTokens"] == 0
            assert row.view["systemTokens"] > 0, expected.external_id
        else:
            assert row.view["systemTokens"] == expected.surface["systemTokens"], expected.external_id
        assert row.view["toolsTokens"] > 0, expected.external_id  # every demo request sends tools
        if expected.surface["unmeteredReplacements"]:
            # The live version 8 folds an unmetered replacement at zero delta (DESIGN §5.1).
            assert row.view["messageTokens"] > expected.surface["messageTokens"], expected.external_id
            drifting += 1
        else:
            assert row.view["messageTokens"] == expected.surface["messageTokens"], expected.external_id
    assert drifting == 1


def test_the_demo_command_sets_up_a_login_and_ingests_once(settings: object) -> None:
    out = StringIO()
    call_command("demo", "--no-serve", stdout=out)
    first = Session.objects.count()
    assert first >= 30
    assert "log in as demo / " in out.getvalue()
    # The link opens the overview on a range that holds the demo's sessions, whatever today is.
    assert "Open http://127.0.0.1:8000/?range=all and log in" in out.getvalue()
    password = out.getvalue().split("log in as demo / ")[1].split()[0]
    assert get_user_model().objects.get(username="demo").check_password(password)

    again = StringIO()
    call_command("demo", "--no-serve", stdout=again)
    assert Session.objects.count() == first
    assert ", 0 events and 0 requests added" in again.getvalue()


def test_the_hosts_own_projection_rows_beside_the_demo_logs_agree_with_our_fold(demo: DemoManifest) -> None:
    checks = list(ProjcacheCheck.objects.values_list("key", "ver", "status"))
    assert len(checks) >= 3
    assert {status for _key, _ver, status in checks} == {ProjcacheCheck.Status.AGREE}
    assert not Warning.objects.filter(kind="projection-mismatch").exists()
