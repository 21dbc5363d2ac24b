from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard.charts import session_breakdown_chart
from dashboard.services.breakdown_series import BreakdownPoint, BreakdownSeries, ReplacementMarker

# --- context breakdown -------------------------------------------------------------------------------


def breakdown_series() -> BreakdownSeries:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    series = BreakdownSeries(breakdown_version=6)
    series.points = [
        BreakdownPoint(0, t0, 100, 0, None, None),
        BreakdownPoint(3, t0 + timedelta(seconds=3), 100, 900, 1200, 200_000),
        BreakdownPoint(9, t0 + timedelta(seconds=9), 100, 300, 1200, 200_000),
    ]
    series.markers = [
        ReplacementMarker(
            7, t0 + timedelta(seconds=7), "compaction", 1, 4, 650, {"inputTokens": 900, "outputTokens": 80}
        ),
        ReplacementMarker(5, t0 + timedelta(seconds=5), "prune", 2, 2, 120, None),
    ]
    return series


def test_the_breakdown_stacks_system_and_messages_as_steps() -> None:
    figure = session_breakdown_chart(breakdown_series())
    system, messages, pressure, window = figure["data"][:4]
    assert (system["stackgroup"], messages["stackgroup"]) == ("breakdown", "breakdown")
    assert system["line"]["shape"] == "hv"
    assert messages["y"] == [0, 900, 300]
    assert pressure["y"] == [None, 1200, 1200]
    assert window["y"] == [None, 200_000, 200_000]
    assert "stackgroup" not in pressure


def test_breakdown_markers_sit_on_the_stack_and_tell_what_they_shadowed() -> None:
    markers = session_breakdown_chart(breakdown_series())["data"][4]
    assert markers["x"] == [7, 5]
    assert markers["y"] == [1000, 1000]
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
    assert by_time["args"][0]["x"][4] == ["2026-01-01T00:00:07+00:00", "2026-01-01T00:00:05+00:00"]
    assert by_time["args"][1]["xaxis.type"] == "date"


def test_a_breakdown_without_markers_has_no_marker_trace() -> None:
    series = breakdown_series()
    series.markers = []
    assert len(session_breakdown_chart(series)["data"]) == 4
