from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import Request, RequestAnalysis, Session, SessionAnalysis, Source, Warning
from dashboard.web.money import usd
from tests.dashboard.test_analysis import START, capture, conversation, ingest_captures, usage_row
from tests.dashboard.test_request_page import deepseek_row


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    """The ranges count back from now: now is a day after the requests these tests store."""
    wall_clock(START + timedelta(days=1))


def analysed_session(tmp_path: Path) -> Session:
    records = conversation()
    records[1] = capture(
        records[1]["request"], key="msg_2", at=START + timedelta(minutes=10), read=0, write=1730
    )
    records[2]["started_at"] = (START + timedelta(minutes=11)).isoformat()
    session = ingest_captures(tmp_path, records)
    session_analyse(session_id=session.pk)
    return session


@pytest.mark.django_db
def test_the_requests_chart_stacks_reported_buckets_against_the_predicted_read(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = analysed_session(tmp_path)
    RequestAnalysis.objects.filter(session=session, request__key="msg_3").update(
        material=True, label="edited"
    )
    response = viewer_client.get(session.get_absolute_url())
    figure = response.context["requests_chart"]
    traces = {trace["name"]: trace for trace in figure["data"]}

    assert figure["layout"]["barmode"] == "stack"
    assert traces["cache read"]["y"] == [0, 0, 1600]
    assert traces["cache write"]["y"] == [1700, 1730, 150]
    assert traces["uncached input"]["y"] == [10, 10, 10]
    assert traces["predicted read"]["y"][0] == 0
    urls = [r.get_absolute_url() for r in Request.objects.filter(session=session).order_by("ordinal")]
    assert traces["cache read"]["customdata"] == urls
    # Requests are numbered from 1, as every page counts them.
    assert (traces["material miss"]["x"], traces["material miss"]["text"]) == ([3], ["edited"])
    assert traces["material miss"]["customdata"] == [urls[2]]
    page = response.content.decode()
    assert 'data-cache-chart="requests-chart-data"' in page
    assert (
        json.loads(page.split('id="requests-chart-data" type="application/json">')[1].split("</script>")[0])
        == figure
    )


@pytest.mark.django_db
def test_the_cacheability_chart_splits_the_shared_prefix_by_tier(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = analysed_session(tmp_path)
    figure = viewer_client.get(session.get_absolute_url()).context["cacheability_chart"]
    traces = {trace["name"]: trace for trace in figure["data"]}
    third = RequestAnalysis.objects.get(session=session, request__key="msg_3").data["cacheability"]

    assert list(traces) == ["tools shared", "system shared", "messages shared", "not shared"]
    assert traces["tools shared"]["y"][2] == third["tools"]["shared"] > 0
    assert traces["system shared"]["y"][2] == third["system"]["shared"] > 0
    assert traces["messages shared"]["y"][2] == 0  # the first user message was edited
    assert traces["not shared"]["y"][2] == sum(share["rest"] for share in third.values())


@pytest.mark.django_db
def test_a_session_without_requests_has_no_chart(viewer_client: Client) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="s", format="dsh"
    )
    response = viewer_client.get(session.get_absolute_url())
    assert response.context["requests_chart"] is None
    assert "Not analysed yet" in response.content.decode()


@pytest.mark.django_db
def test_an_operator_can_queue_the_analysis_again(tmp_path: Path, operator_client: Client) -> None:
    session = ingest_captures(tmp_path, conversation())
    response = operator_client.post(reverse("dashboard:session_analyse", args=[session.pk]))

    assert response.status_code == 302
    assert response["Location"] == session.get_absolute_url()
    assert SessionAnalysis.objects.get(session=session).status == "queued"  # runs once the request commits


@pytest.mark.django_db
def test_a_viewer_cannot_queue_an_analysis(tmp_path: Path, viewer_client: Client) -> None:
    session = ingest_captures(tmp_path, conversation())
    response = viewer_client.post(reverse("dashboard:session_analyse", args=[session.pk]))
    assert response.status_code == 403
    assert not SessionAnalysis.objects.exists()


@pytest.mark.django_db
def test_the_overview_shows_the_hit_rate_per_day_and_the_top_re_writers(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = analysed_session(tmp_path)
    other = Session.objects.create(source=session.source, external_id="later", format="claude-code")
    usage_row(other, 0, START + timedelta(days=1), 0, 10_000, uncached=0)
    usage_row(other, 1, START + timedelta(days=1, minutes=1), 10_000, 0, uncached=0)
    rollups_rebuild()

    response = viewer_client.get(reverse("dashboard:overview"))
    days = response.context["fleet_points"]
    assert [f"{point.start:%Y-%m-%d}" for point in days] == ["2026-01-05", "2026-01-06"]
    assert days[0].hit_rate == pytest.approx(1600 / (1600 + 30 + 3580))
    assert days[1].hit_rate == pytest.approx(0.5)
    assert response.context["fleet_hit_rate_chart"]["data"][0]["y"][-2:] == [day.hit_rate for day in days]
    rewriters = response.context["rewriters"]
    rewritten = sum(
        RequestAnalysis.objects.filter(session=session).values_list("rewritten_tokens", flat=True)
    )
    assert rewritten > 1700  # msg_2 wrote msg_1's expired prefix again
    assert [(row["session"], row["rewritten"]) for row in rewriters] == [(session, rewritten)]
    page = response.content.decode()
    assert "Most re-written tokens" in page
    assert session.get_absolute_url() in page


@pytest.mark.django_db
def test_warnings_filter_by_kind_severity_source_and_session(viewer_client: Client) -> None:
    laptop, farm = Source.objects.create(name="laptop"), Source.objects.create(name="farm")
    one = Session.objects.create(source=laptop, external_id="one", format="dsh")
    two = Session.objects.create(source=farm, external_id="two", format="dsh")
    Warning.objects.create(session=one, kind="over-credit", place="main", message="credited too much")
    Warning.objects.create(session=two, kind="fold-error", place="seq 4", message="the fold stopped", seq=4)
    Warning.objects.create(session=two, kind="over-credit", place="main", message="credited twice too much")

    def messages(**params: str) -> list[str]:
        response = viewer_client.get(reverse("dashboard:warnings"), params)
        return sorted(w.message for group in response.context["groups"] for w in group.warnings)

    assert messages() == ["credited too much", "credited twice too much", "the fold stopped"]
    assert messages(source="laptop") == ["credited too much"]
    assert messages(session=str(two.pk)) == ["credited twice too much", "the fold stopped"]
    assert messages(session=str(two.pk), kind="fold-error") == ["the fold stopped"]
    assert messages(severity="error") == ["the fold stopped"]
    assert messages(session="nonsense") == messages()


@pytest.mark.django_db
def test_the_warnings_filter_answers_htmx_with_the_table_alone(viewer_client: Client) -> None:
    laptop = Source.objects.create(name="laptop")
    one = Session.objects.create(source=laptop, external_id="one", format="dsh")
    Warning.objects.create(session=one, kind="over-credit", place="main", message="credited <b>too</b> much")

    page = viewer_client.get(reverse("dashboard:warnings"), {"source": "laptop"}, HTTP_HX_REQUEST="true")
    body = page.content.decode()
    assert body.lstrip().startswith('<section id="warning-table"')
    assert "credited &lt;b&gt;too&lt;/b&gt; much" in body
    assert "<h1>" not in body


@pytest.mark.django_db
def test_the_overview_splits_the_fleet_by_source_and_lists_waste_misses_and_warnings(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = analysed_session(tmp_path)
    other_source = Source.objects.create(name="farm")
    # With the start and the write sum an ingest's summary would give it.
    wasteful = Session.objects.create(
        source=other_source,
        external_id="wasteful",
        format="claude-code",
        started_at=START,
        cache_write_tokens=20_000,
    )
    # Writes 10,000 tokens, then the next call comes back after the 5-minute TTL: nothing is read.
    usage_row(wasteful, 0, START, 0, 10_000, uncached=0)
    usage_row(wasteful, 1, START + timedelta(minutes=20), 0, 10_000, uncached=0)
    # Counted in the range by the moment it concerns.
    Warning.objects.create(
        session=wasteful, kind="over-credit", place="main", message="m", count=3, happened_at=START
    )
    rollups_rebuild()

    response = viewer_client.get(reverse("dashboard:overview"))
    chart = response.context["fleet_sources_chart"]
    names = [trace["name"] for trace in chart["data"]]
    assert {"farm", "farm hit rate", session.source.name} <= set(names)
    assert reverse("dashboard:overview_wasted") in response.content.decode()  # loaded once in view
    fragment = viewer_client.get(reverse("dashboard:overview_wasted"), HTTP_HX_REQUEST="true")
    assert fragment.content.decode().lstrip().startswith('<section class="card" id="fleet-wasted"')
    wasters = viewer_client.get(reverse("dashboard:overview_wasted")).context["wasters"]
    assert wasters[0]["session"] == wasteful
    assert wasters[0]["tokens"] == 20_000  # neither write was read back within its TTL
    assert f'<td class="num">{usd(wasters[0]["cost"])}</td>' in fragment.content.decode()  # one style
    kinds = dict(
        zip(*[response.context["warnings_chart"]["data"][0][axis] for axis in ("x", "y")], strict=True)
    )
    assert kinds["over-credit"] == 3
    misses = response.context["recent_misses"]
    assert all(miss.material for miss in misses)
    page = response.content.decode()
    assert "Top wasted cache writes" in page
    assert "Warnings by kind" in page


@pytest.mark.django_db
def test_an_unknown_predicted_read_is_a_gap_in_the_chart_and_a_dash_in_the_requests_list(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="ds", format="dsh"
    )
    for ordinal, read in enumerate((0, 8_064, 8_448)):
        deepseek_row(session, ordinal, read)
    session_analyse(session_id=session.pk)

    chart = viewer_client.get(session.get_absolute_url()).context["requests_chart"]
    predicted = next(trace for trace in chart["data"] if trace["name"] == "predicted read")
    assert predicted["y"] == [None, None, None]
    assert predicted["connectgaps"] is False
    listed = viewer_client.get(reverse("dashboard:requests"), {"session": session.pk})
    assert [call.predicted_read for call in listed.context["page"]] == [None, None, None]
