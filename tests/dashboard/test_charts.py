from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dashboard.sessions.breakdown_chart import session_breakdown_chart
from dashboard.sessions.breakdown_series import BreakdownPoint, BreakdownSeries, ReplacementMarker
from dashboard.web.charts import base_layout, warnings_by_kind_chart

# --- context breakdown -------------------------------------------------------------------------------


def breakdown_series() -> BreakdownSeries:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    series = BreakdownSeries(breakdown_version=6)
    series.points = [
        BreakdownPoint(0, t0, 100, 50, 0, None, None, None),
        BreakdownPoint(3, t0 + timedelta(seconds=3), 100, 50, 900, None, 1200, 200_000),
        BreakdownPoint(9, t0 + timedelta(seconds=9), 100, 50, 300, None, None, 200_000),
    ]
    series.markers = [
        ReplacementMarker(
            7, t0 + timedelta(seconds=7), "compaction", 1, 4, 650, {"inputTokens": 900, "outputTokens": 80}
        ),
        ReplacementMarker(5, t0 + timedelta(seconds=5), "prune", 2, 2, 120, None),
    ]
    return series


def names(figure: dict[str, Any]) -> list[str]:
    return [trace["name"] for trace in figure["data"]]


def test_the_breakdown_stacks_system_tools_and_messages_as_steps() -> None:
    figure = session_breakdown_chart(breakdown_series())
    system, tools, messages, provider = figure["data"][:4]
    assert names(figure)[:4] == ["system", "tools", "messages", "provider-reported prompt"]
    assert {system["stackgroup"], tools["stackgroup"], messages["stackgroup"]} == {"context"}
    assert system["line"]["shape"] == "hv"
    assert tools["y"] == [50, 50, 50]
    assert messages["y"] == [0, 900, 300]
    assert provider["y"] == [None, 1200, None]
    assert provider["connectgaps"] is True
    assert "stackgroup" not in provider


def test_a_window_far_above_the_context_is_named_not_drawn_and_the_axis_fits_the_data() -> None:
    figure = session_breakdown_chart(breakdown_series())
    assert "context window" not in names(figure)
    low, high = figure["layout"]["yaxis"]["range"]
    assert low == 0
    assert 1200 <= high < 2 * 1200
    (note,) = figure["layout"]["annotations"]
    assert "context window 200,000 tokens" in note["text"]
    assert "0.2% used" in note["text"]  # 450 of 200,000, as the page beside it rounds it


def test_a_window_near_the_context_is_drawn_as_a_line_with_the_auto_compact_point() -> None:
    series = breakdown_series()
    series.points = [replace(point, window=1_600) for point in series.points]
    series.auto_compact = 1_400
    figure = session_breakdown_chart(series)
    window = figure["data"][names(figure).index("context window")]
    compact = figure["data"][names(figure).index("auto-compact")]
    assert window["y"] == [1_600, 1_600, 1_600]
    assert compact["y"] == [1_400, 1_400, 1_400]
    assert figure["layout"]["yaxis"]["range"][1] >= 1_600
    assert "annotations" not in figure["layout"]


def test_a_usage_only_session_stacks_an_inferred_band_and_no_system_prompt() -> None:
    series = breakdown_series()
    series.points = [replace(point, system=None, tools=None, inferred=20_000) for point in series.points]
    figure = session_breakdown_chart(series)
    assert "system" not in names(figure)
    assert "tools" not in names(figure)
    band = figure["data"][names(figure).index("system + tools (inferred)")]
    assert band["stackgroup"] == "context"
    assert band["y"] == [20_000, 20_000, 20_000]


def test_breakdown_markers_sit_on_the_stack_and_tell_what_they_shadowed() -> None:
    markers = session_breakdown_chart(breakdown_series())["data"][-1]
    assert markers["x"] == [7, 5]
    assert markers["y"] == [1050, 1050]
    assert markers["marker"]["symbol"] == ["triangle-down", "x"]
    compaction = markers["text"][0]
    for part in (
        "compaction at seq 7",
        "shadowed range 1..4",
        "shadowed tokens 650",
        "summarizer input 900, output 80",
    ):
        assert part in compaction
    assert "summarizer" not in markers["text"][1]


def test_the_breakdown_switches_its_x_axis_between_seq_and_time() -> None:
    figure = session_breakdown_chart(breakdown_series())
    by_event, by_time = figure["layout"]["updatemenus"][0]["buttons"]
    assert by_event["args"][0]["x"][0] == [0, 3, 9]
    assert by_time["args"][0]["x"][0][1] == "2026-01-01T00:00:03+00:00"
    assert by_time["args"][0]["x"][-1] == ["2026-01-01T00:00:07+00:00", "2026-01-01T00:00:05+00:00"]
    assert by_time["args"][1]["xaxis.type"] == "date"


def test_a_breakdown_without_markers_has_no_marker_trace() -> None:
    series = breakdown_series()
    series.markers = []
    assert "compactions and prunes" not in names(session_breakdown_chart(series))


def test_a_short_log_gets_one_tick_per_seq_and_a_long_one_automatic_ticks() -> None:
    short = session_breakdown_chart(breakdown_series())
    assert short["layout"]["xaxis"]["dtick"] == 1
    series = breakdown_series()
    series.points = [*series.points, replace(series.points[-1], seq=400)]
    assert "dtick" not in session_breakdown_chart(series)["layout"]["xaxis"]


# --- warnings ----------------------------------------------------------------------------------------


def test_a_large_warning_count_keeps_automatic_ticks_but_labels_only_whole_counts() -> None:
    axis = warnings_by_kind_chart([("unexplained-miss", 4_000), ("render-mismatch", 3)])["layout"]["yaxis"]
    assert (axis["tickformat"], axis["rangemode"]) == (",d", "tozero")
    assert "dtick" not in axis


def test_a_charts_box_is_as_tall_before_it_is_drawn_as_after() -> None:
    # Charts draw as they near the screen: a box that grew then would move the links below it.
    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "cachescope.css").read_text()
    (reserved,) = re.findall(r"\.chart \{[^}]*min-height: (\d+)px", css)
    assert int(reserved) == base_layout("t", y="y")["height"]
