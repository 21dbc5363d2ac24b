"""The overview over a time range: it counts back from now, says how many stored sessions it leaves
out and links to the range that shows them, is cut into buckets the axis labels by itself, leaves
empty buckets empty, and links each bucket to the requests (and sessions) in it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.fleet.charts import RIGHT_AXIS_MARGIN
from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import Request, RequestAnalysis, Session, Source
from dashboard.web.charts import base_layout

pytestmark = pytest.mark.django_db

NEWEST = datetime(2026, 3, 4, 15, 20, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now_is_just_after_the_newest_request(wall_clock: Callable[[datetime], None]) -> None:
    wall_clock(NEWEST + timedelta(minutes=10))


def fleet(days_ago: list[int], *, source: str = "farm") -> Session:
    """One session with a request at 15:20 on each of the given days before :data:`NEWEST`."""
    stored, _ = Source.objects.get_or_create(name=source)
    times = [NEWEST - timedelta(days=days) for days in days_ago]
    session = Session.objects.create(
        source=stored,
        external_id=f"{source}-{len(days_ago)}",
        format="dsh",
        started_at=min(times),
        last_activity=max(times),
    )
    for ordinal, moment in enumerate(sorted(times)):
        Request.objects.create(
            session=session,
            ordinal=ordinal,
            key=f"r{ordinal}",
            provider="anthropic",
            model="claude-sonnet-4",
            started_at=moment,
            uncached_input_tokens=100,
            cache_read_tokens=300,
            cache_write_5m_tokens=100,
            output_tokens=10,
        )
    rollups_rebuild()
    return session


def overview(client: Client, **params: str) -> dict:  # type: ignore[type-arg]
    response = client.get(reverse("dashboard:overview"), params)
    assert response.status_code == 200
    return response.context  # type: ignore[no-any-return]


def test_the_default_range_is_the_thirty_days_counting_back_from_now(
    viewer_client: Client, wall_clock: Callable[[datetime], None]
) -> None:
    fleet([0, 3, 28])
    wall_clock(NEWEST + timedelta(days=5))

    context = overview(viewer_client)

    window = context["window"]
    assert (context["range"], window.step) == ("30d", "day")
    assert window.end == datetime(2026, 3, 10, tzinfo=UTC)
    assert len(window.buckets) == 30
    assert context["totals"]["requests"] == 2  # the request 33 days before now is outside the range
    assert context["outside"] is None  # the one session was active in the range


def test_sessions_months_older_than_the_newest_are_counted_with_a_link_to_the_range_that_shows_them(
    viewer_client: Client,
) -> None:
    fleet([0, 1])
    fleet([60], source="laptop")
    fleet([150], source="ci")

    context = overview(viewer_client)
    page = viewer_client.get(reverse("dashboard:overview")).content.decode()

    assert (context["totals"]["sessions"], context["outside"].sessions, context["outside"].wider) == (
        1,
        2,
        "all",
    )
    assert 'href="?range=all"' in page
    assert "2 stored sessions lie outside this range: show all time" in page
    ninety = overview(viewer_client, range="90d")
    assert (ninety["totals"]["sessions"], ninety["outside"].sessions) == (2, 1)
    assert overview(viewer_client, range="all")["outside"] is None
    assert overview(viewer_client, range="all")["totals"]["sessions"] == 3


def test_a_range_that_leaves_out_only_a_few_weeks_links_to_the_next_range_up(viewer_client: Client) -> None:
    fleet([0])
    fleet([50], source="laptop")

    outside = overview(viewer_client)["outside"]

    assert (outside.sessions, outside.wider, outside.wider_label) == (1, "90d", "the last 90 days")


def test_a_fleet_whose_logs_stopped_long_ago_never_shows_an_empty_all_clear(
    viewer_client: Client, wall_clock: Callable[[datetime], None]
) -> None:
    session = fleet([0, 1])
    RequestAnalysis.objects.create(
        session=session, request=session.requests.first(), material=True, label="ttl-expired"
    )
    wall_clock(NEWEST + timedelta(days=200))

    page = viewer_client.get(reverse("dashboard:overview")).content.decode()

    link = "1 stored session lies outside this range: show all time"
    assert 'id="outside-range"' in page
    for empty in (
        "No material misses in this range.",
        "No warnings in this range.",
        "No request in this range.",
    ):
        assert f"{empty} <a" in page, empty
    assert "No material misses.</p>" not in page
    assert "No timed requests yet" not in page
    assert page.count(link) == 1  # the note under the range picker
    assert page.count("1 stored session outside it: show all time") >= 4  # and each empty panel
    assert len(overview(viewer_client, range="all")["recent_misses"]) == 1


def test_an_empty_bucket_breaks_the_line_and_carries_no_link(viewer_client: Client) -> None:
    fleet([0, 3])

    chart = overview(viewer_client, range="7d")["fleet_hit_rate_chart"]

    [line] = chart["data"]
    assert line["connectgaps"] is False
    assert len(line["x"]) == 7
    assert [value is None for value in line["y"]] == [True, True, True, False, True, True, False]
    assert [url is None for url in line["customdata"]] == [value is None for value in line["y"]]


def test_the_date_axis_picks_at_most_a_dozen_ticks_itself(viewer_client: Client) -> None:
    fleet(list(range(0, 240, 3)))

    for name in ("24h", "7d", "30d", "90d", "all"):
        context = overview(viewer_client, range=name)
        for chart in (context["fleet_hit_rate_chart"], context["fleet_sources_chart"]):
            axis = chart["layout"]["xaxis"]
            assert axis["nticks"] <= 12
            assert "dtick" not in axis
            assert "tickvals" not in axis
            assert len(chart["data"][0]["x"]) <= 100, name
    assert overview(viewer_client, range="all")["window"].step == "week"
    assert overview(viewer_client, range="24h")["window"].step == "hour"


def test_a_weekly_axis_and_a_daily_one_into_a_new_year_label_their_ticks_with_the_year(
    viewer_client: Client,
) -> None:
    fleet(list(range(0, 400, 3)))  # from early 2025 to March 2026

    def tick_formats(name: str) -> set[str]:
        context = overview(viewer_client, range=name)
        charts = (context["fleet_hit_rate_chart"], context["fleet_sources_chart"])
        return {chart["layout"]["xaxis"]["tickformat"] for chart in charts}

    assert tick_formats("all") == {"%b %d<br>%Y"}
    assert tick_formats("90d") == {"%b %d<br>%Y"}  # from December 2025
    assert tick_formats("30d") == {"%b %d"}
    assert tick_formats("24h") == {"%b %d %H:%M"}


def test_each_point_opens_the_requests_of_its_bucket(viewer_client: Client) -> None:
    fleet([0, 1])
    fleet([1], source="laptop")

    context = overview(viewer_client, range="7d")
    sources = {trace["name"]: trace for trace in context["fleet_sources_chart"]["data"]}
    farm_url = next(url for url in sources["farm"]["customdata"] if url)
    fleet_url = next(url for url in context["fleet_hit_rate_chart"]["data"][0]["customdata"] if url)

    assert parse_qs(urlsplit(farm_url).query) == {
        "since": ["2026-03-03T00:00:00Z"],
        "until": ["2026-03-04T00:00:00Z"],
        "source": ["farm"],
    }
    listed = viewer_client.get(farm_url).context["page"]
    assert [call.session.source.name for call in listed] == ["farm"]
    assert len(viewer_client.get(fleet_url).context["page"]) == 2  # both sources that day
    page = viewer_client.get(reverse("dashboard:overview"), {"range": "7d"}).content.decode()
    assert fleet_url.replace("&", "&amp;") in page  # the table under the chart links it too


def test_the_range_picker_links_every_range_and_marks_the_current_one(viewer_client: Client) -> None:
    fleet([0])

    page = viewer_client.get(reverse("dashboard:overview"), {"range": "90d"}).content.decode()

    for name in ("24h", "7d", "30d", "90d", "all"):
        assert f'href="?range={name}"' in page
    assert 'href="?range=90d" aria-current="page"' in page


def test_an_unknown_range_falls_back_to_thirty_days(viewer_client: Client) -> None:
    fleet([0])

    assert overview(viewer_client, range="1y")["range"] == "30d"


def test_an_empty_fleet_has_no_window_and_no_charts(viewer_client: Client) -> None:
    context = overview(viewer_client)

    assert context["window"] is None
    assert context["fleet_hit_rate_chart"] is None
    assert context["totals"]["requests"] == 0


def test_the_sessions_list_narrows_to_the_sessions_active_in_a_bucket(viewer_client: Client) -> None:
    early = fleet([40, 39])
    late = fleet([2, 1, 0], source="laptop")

    def listed(**params: str) -> list[str]:
        return [
            s.external_id
            for s in viewer_client.get(reverse("dashboard:sessions"), params).context["page"].rows
        ]

    assert listed(since="2026-03-02T00:00:00Z", until="2026-03-03T00:00:00Z") == [late.external_id]
    assert listed(since="2026-01-20T00:00:00Z", until="2026-01-25T00:00:00Z") == [early.external_id]
    assert listed(since="2026-01-26", until="2026-02-25") == []
    response = viewer_client.get(reverse("dashboard:sessions"), {"since": "yesterday"})
    assert "since" in response.context["filters"].errors


def test_a_source_or_client_release_link_lists_only_the_sessions_of_the_range(viewer_client: Client) -> None:
    fleet([45, 44])
    recent = fleet([1])
    Session.objects.update(client_version="2.1.0")
    Request.objects.update(client_version="2.1.0")
    rollups_rebuild()

    page = viewer_client.get(reverse("dashboard:overview"), {"range": "30d"}).content.decode()
    for name, value in (("source", "farm"), ("client_version", "2.1.0")):
        [link] = re.findall(rf'href="({reverse("dashboard:sessions")}\?{name}=[^"]*)"', page)
        link = link.replace("&amp;", "&")
        assert parse_qs(urlsplit(link).query)[name] == [value]
        listed = [s.external_id for s in viewer_client.get(link).context["page"].rows]
        assert listed == [recent.external_id], name  # not the session of 45 days back


def test_the_sources_chart_keeps_room_for_its_hit_rate_axis_on_the_right(viewer_client: Client) -> None:
    fleet([0, 1])

    layout = overview(viewer_client, range="7d")["fleet_sources_chart"]["layout"]

    assert layout["yaxis2"]["side"] == "right"
    assert layout["yaxis2"]["title"]["text"] == "hit rate"
    # Its own round ticks, 0 % to 100 %, not ticks level with the token axis's.
    assert (layout["yaxis2"]["tickmode"], layout["yaxis2"]["tick0"], layout["yaxis2"]["dtick"]) == (
        "linear",
        0,
        0.25,
    )
    assert layout["margin"]["r"] == RIGHT_AXIS_MARGIN > base_layout("", y="")["margin"]["r"]


def test_the_active_sessions_are_counted_again_only_once_a_session_is_added_or_moves_on(
    viewer_client: Client,
) -> None:
    fleet([0, 1])
    assert overview(viewer_client, range="7d")["totals"]["sessions"] == 1

    with CaptureQueriesContext(connection) as queries:
        again = overview(viewer_client, range="7d")
    counted = [query for query in queries if 'COUNT("dashboard_session"."id")' in query["sql"]]

    assert (again["totals"]["sessions"], counted) == (1, [])
    fleet([1], source="laptop")
    assert overview(viewer_client, range="7d")["totals"]["sessions"] == 2
    Session.objects.filter(source__name="laptop").update(
        event_count=7, last_activity=NEWEST + timedelta(minutes=5)
    )
    assert overview(viewer_client, range="7d")["totals"]["events"] == 7


def test_all_time_counts_every_session_even_one_active_outside_the_requests_span(
    viewer_client: Client,
) -> None:
    fleet([0, 3])
    farm = Source.objects.get(name="farm")
    # A log with no request, older than the oldest request, and one with no time at all.
    Session.objects.create(
        source=farm,
        external_id="older",
        format="dsh",
        started_at=NEWEST - timedelta(days=40),
        last_activity=NEWEST - timedelta(days=40),
    )
    Session.objects.create(source=farm, external_id="undated", format="dsh")
    assert overview(viewer_client, range="all")["totals"]["sessions"] == 3


def test_a_session_without_a_time_is_in_no_range_of_some_length(viewer_client: Client) -> None:
    fleet([0, 1])
    farm = Source.objects.get(name="farm")
    # Stored just now from a log with no wall-clock time: its last activity is its storing.
    Session.objects.create(source=farm, external_id="undated", format="dsh", last_activity=NEWEST)
    assert overview(viewer_client, range="7d")["totals"]["sessions"] == 1
    assert overview(viewer_client, range="all")["totals"]["sessions"] == 2
    since = (NEWEST - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    listed = viewer_client.get(reverse("dashboard:sessions"), {"since": since}).content.decode()
    assert "undated" not in listed
    assert "farm-2" in listed


def stray(moment: datetime, *, source: str = "farm") -> None:
    """A session with one request at ``moment``, as stored before ingest kept such times unknown."""
    stored, _ = Source.objects.get_or_create(name=source)
    session = Session.objects.create(
        source=stored,
        external_id=f"stray-{moment.year}",
        format="dsh",
        started_at=moment,
        last_activity=moment,
    )
    Request.objects.create(
        session=session, ordinal=0, key="r0", provider="anthropic", model="claude-sonnet-4",
        started_at=moment, uncached_input_tokens=5, cache_read_tokens=0, output_tokens=1,
    )  # fmt: skip
    rollups_rebuild()


def test_rows_dated_9999_0001_and_1970_move_no_window_and_all_still_answers(viewer_client: Client) -> None:
    fleet([0, 3, 45])
    for moment in (
        datetime(9999, 12, 29, tzinfo=UTC),
        datetime(1, 1, 3, tzinfo=UTC),
        datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
    ):
        stray(moment)

    default = overview(viewer_client)["window"]
    assert (default.start, default.end) == (
        datetime(2026, 2, 3, tzinfo=UTC),
        datetime(2026, 3, 5, tzinfo=UTC),
    )
    everything = overview(viewer_client, range="all")
    assert everything["window"].step == "day"  # the 45 days of plausible data, not 10,000 years
    assert everything["window"].start == datetime(2026, 1, 18, tzinfo=UTC)
    assert everything["window"].end == datetime(2026, 3, 5, tzinfo=UTC)
    assert everything["totals"]["requests"] == 3


def test_all_of_a_long_history_is_cut_into_at_most_a_few_hundred_buckets(viewer_client: Client) -> None:
    fleet([0, 3])
    stray(datetime(2001, 5, 1, tzinfo=UTC))

    context = overview(viewer_client, range="all")

    assert context["window"].step == "year"
    assert len(context["fleet_hit_rate_chart"]["data"][0]["x"]) == 26  # 2001 to 2026
    assert context["fleet_sources_chart"]["layout"]["xaxis"]["tickformat"] == "%Y"


def test_the_sources_chart_plots_cost_for_the_five_costliest_and_sums_the_rest_as_other(
    viewer_client: Client,
) -> None:
    for index in range(8):
        session = fleet([0, 1], source=f"host-{index}")
        # host-7 spends most: its requests cost more the more tokens they write.
        session.requests.update(cache_write_5m_tokens=1000 * (index + 1))
    rollups_rebuild()

    chart = overview(viewer_client, range="7d")["fleet_sources_chart"]

    bars = [trace for trace in chart["data"] if trace["type"] == "bar"]
    assert [trace["name"] for trace in bars] == [
        "host-7",
        "host-6",
        "host-5",
        "host-4",
        "host-3",
        "3 other sources",
    ]
    assert [trace.get("showlegend", True) for trace in chart["data"]].count(True) == 6  # one a source
    assert chart["layout"]["yaxis"]["title"]["text"] == "USD"
    # host-0's bar on the newest day, at Sonnet 4's prices: 100 in, 300 read, 1,000 written, 10 out.
    other = bars[-1]
    expected = sum((100 * 3 + 300 * 0.3 + 1000 * (i + 1) * 3.75 + 10 * 15) / 1e6 for i in range(3))
    assert other["y"][-1] == pytest.approx(expected)
    assert set(other["customdata"]) == {None}  # no one list holds what it sums


def test_without_any_price_the_sources_chart_plots_the_tokens_that_carry_the_cost(
    viewer_client: Client,
) -> None:
    fleet([0])
    Request.objects.update(model="house-model")
    rollups_rebuild()

    chart = overview(viewer_client, range="7d")["fleet_sources_chart"]

    [bars] = [trace for trace in chart["data"] if trace["type"] == "bar"]
    assert bars["y"][-1] == 100 + 100  # uncached input and the 5-minute write
    assert chart["layout"]["yaxis"]["title"]["text"] == "tokens"


def test_a_source_name_is_drawn_as_written_not_as_markup_or_a_template_field(viewer_client: Client) -> None:
    name = '<a href="javascript:alert(1)">%{y}</a>'
    fleet([0], source=name)

    chart = overview(viewer_client, range="7d")["fleet_sources_chart"]

    for trace in chart["data"]:
        assert "<a" not in trace["name"]
        assert "%{y}" not in trace["name"]
        assert trace["name"].startswith('&lt;a href="javascript:alert(1)"&gt;&#37;{y}&lt;/a&gt;')
        assert trace["hovertemplate"].count("%{") == 2  # the chart's own fields only
        assert "&lt;a href" in trace["hovertemplate"]
