"""The overview's charts over time: the fleet's hit rate, and cost and hit rate by source.

Every bucket of the window is on the axis, empty ones included, with no value: a line breaks there
instead of joining two dates across a quiet month, and a bar is simply absent. The date axis picks
its own ticks (at most a dozen), never one per bucket. Each point and bar carries, as
``customdata``, the URL of the requests it sums, which ``static/js/cache-charts.js`` opens on click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dashboard.web.charts import READ_COLOUR, Figure, base_layout, plotly_text

MAX_TICKS = 12
SOURCE_COLOURS = ("#2456a6", "#2f8f5b", "#d08a1e", "#c2413b", "#6b4fa0", "#3a8fa8", "#8a6d3b", "#5f6b7a")
# A weekly axis is a long one, and "Jan 05" alone could be either of two years on it. The year goes
# on a second line: on one, a dozen "May 01, 2026" labels tilt and are cut off at the chart's foot.
TICK_FORMATS = {
    "hour": "%b %d %H:%M",
    "day": "%b %d",
    "week": "%b %d<br>%Y",
    "month": "%b<br>%Y",
    "year": "%Y",
}
DAY_ACROSS_YEARS = "%b %d<br>%Y"
HOVER_FORMATS = {
    "hour": "%Y-%m-%d %H:00",
    "day": "%Y-%m-%d",
    "week": "week of %Y-%m-%d",
    "month": "%B %Y",
    "year": "%Y",
}


@dataclass(frozen=True, slots=True)
class BucketPoint:
    """One bucket of a series: its start, its figures (``None`` or 0 when it holds no request) and
    the URL of the requests behind it."""

    start: datetime
    requests: int
    hit_rate: float | None
    prompt: int
    uncached: int
    url: str | None
    """``None`` for a point that stands for no one list (the sources beyond the chart's top ones)."""
    billed: int = 0
    """Tokens billed at the input price or above: uncached input and cache writes, which carry the cost."""
    cost: float | None = None
    """USD of the bucket's priced requests; ``None`` when none has a price."""


def time_axis(step: str, points: Sequence[BucketPoint]) -> dict[str, Any]:
    """A date axis that chooses its own ticks, at most :data:`MAX_TICKS`, labelled for the step; a
    daily axis over ``points`` that run into a new year names the year too."""
    crosses_year = len({point.start.year for point in points}) > 1
    return {
        "title": {"text": step},
        "type": "date",
        "nticks": MAX_TICKS,
        # Room below for two-line labels, so the axis title does not sit on them.
        "automargin": True,
        "tickformat": DAY_ACROSS_YEARS if step == "day" and crosses_year else TICK_FORMATS[step],
        "hoverformat": HOVER_FORMATS[step],
    }


def _x(points: Sequence[BucketPoint]) -> list[str]:
    return [point.start.isoformat() for point in points]


def fleet_hit_rate_chart(points: Sequence[BucketPoint], *, step: str) -> Figure:
    """The fleet's cache hit rate per bucket, as a line broken wherever a bucket holds no request."""
    layout = base_layout(f"Cache hit rate per {step}", y="hit rate")
    layout["xaxis"] = time_axis(step, points)
    layout["yaxis"] = {"title": {"text": "hit rate"}, "tickformat": ".0%", "range": [0, 1]}
    layout["hovermode"] = "closest"
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "hit rate",
                "x": _x(points),
                "y": [point.hit_rate if point.requests else None for point in points],
                "customdata": [point.url if point.requests else None for point in points],
                "text": [f"{point.requests:,} requests · {point.prompt:,} prompt tokens" for point in points],
                "line": {"color": READ_COLOUR},
                "connectgaps": False,
                "hovertemplate": "%{x}: %{y:.1%} · %{text}<extra></extra>",
            }
        ],
        "layout": layout,
    }


RIGHT_AXIS_MARGIN = 64
"""Pixels right of the plot for a right-hand axis: its widest tick label and its title."""


def fleet_sources_chart(series: Mapping[str, Sequence[BucketPoint]], *, step: str) -> Figure:
    """Cost per bucket as bars stacked by source, and each source's hit rate as a dotted line.

    Cost, not uncached input: cache writes cost more than input and carry most of a bill. A fleet
    with no price for any model plots the tokens billed at the input price or above instead
    (uncached input and cache writes). Each source is one legend entry, its line grouped with its
    bars (one click hides both), so a fleet of many sources (shown as the costliest and "other",
    :func:`~dashboard.fleet.cache_panels.source_series`) keeps its plot.
    """
    priced = any(point.cost is not None for points in series.values() for point in points)
    data: list[dict[str, Any]] = []
    for index, (name, points) in enumerate(series.items()):
        source = plotly_text(name)
        colour = SOURCE_COLOURS[index % len(SOURCE_COLOURS)]
        urls = [point.url if point.requests else None for point in points]
        if priced:
            bars: list[Any] = [point.cost if point.requests else None for point in points]
            hover = f"{source}: $%{{y:,.4g}}<extra>%{{x}}</extra>"
        else:
            bars = [point.billed if point.requests else None for point in points]
            hover = f"{source}: %{{y:,}} uncached and written tokens<extra>%{{x}}</extra>"
        data.append(
            {
                "type": "bar",
                "name": source,
                "legendgroup": source,
                "x": _x(points),
                "y": bars,
                "customdata": urls,
                "marker": {"color": colour},
                "hovertemplate": hover,
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{source} hit rate",
                "legendgroup": source,
                "showlegend": False,
                "x": _x(points),
                "y": [point.hit_rate if point.requests else None for point in points],
                "customdata": urls,
                "yaxis": "y2",
                "connectgaps": False,
                "line": {"color": colour, "dash": "dot"},
                # Ringed in white: a dot drawn over its own source's bar is the bar's colour too.
                "marker": {"color": colour, "line": {"color": "#ffffff", "width": 1.5}},
                "hovertemplate": f"{source}: %{{y:.1%}} hit rate<extra>%{{x}}</extra>",
            }
        )
    figure = "cost" if priced else "uncached input and cache writes"
    layout = base_layout(
        f"{figure.capitalize()} and hit rate per {step}, by source", y="USD" if priced else "tokens"
    )
    if priced:
        layout["yaxis"]["tickprefix"] = "$"
    # Every source's points cover the same buckets, the window's.
    layout["xaxis"] = time_axis(step, next(iter(series.values()), []))
    layout["hovermode"] = "closest"
    layout["yaxis2"] = {
        "title": {"text": "hit rate"},
        "overlaying": "y",
        "side": "right",
        "range": [0, 1],
        "tickformat": ".0%",
        # Round percentages of its own, not ticks drawn level with the token axis's.
        "tickmode": "linear",
        "tick0": 0,
        "dtick": 0.25,
    }
    # One legend entry per source, below the axis title. The right axis's ticks ("100%") and title
    # need more than the 20 px other charts keep on the right.
    layout["legend"] = {"orientation": "h", "y": -0.3}
    layout["margin"] = {**layout["margin"], "b": 70, "r": RIGHT_AXIS_MARGIN}
    layout["height"] = 400
    return {"data": data, "layout": layout}
