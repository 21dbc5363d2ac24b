"""Plotly figure dicts for the pages; the only module that knows about plotly's figure format.

Figures are built as plain JSON-ready dicts, passed to the page with ``json_script`` and drawn by a
small script in ``static/js/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dashboard.services.breakdown_series import BreakdownPoint, BreakdownSeries, ReplacementMarker

Figure = dict[str, Any]

READ_COLOUR = "#2f8f5b"
WRITE_COLOUR = "#d08a1e"
UNCACHED_COLOUR = "#c2413b"
PREDICTED_COLOUR = "#17212e"
TIER_COLOURS = {"tools": "#6b4fa1", "system": "#2456a6", "messages": "#2f8f5b"}
NOT_SHARED_COLOUR = "#c2413b"


@dataclass(frozen=True, slots=True)
class RequestBar:
    """One request of a session as the requests chart shows it."""

    ordinal: int
    url: str
    read: int | None
    write: int | None
    uncached: int | None
    predicted_read: int | None
    material: bool
    label: str


@dataclass(frozen=True, slots=True)
class CacheabilityBar:
    """Tokens of one request shared with the previous request of its lineage, per tier, and the rest."""

    ordinal: int
    url: str
    shared: dict[str, int]
    rest: int


DAY_AXIS: dict[str, Any] = {
    "title": {"text": "day"},
    "type": "date",
    "tickformat": "%Y-%m-%d",
    "dtick": 86_400_000,
}
"""Whole days on the axis: with one day of data plotly would otherwise label it in milliseconds."""


def _layout(title: str, *, y: str, x: str = "request") -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}},
        "barmode": "stack",
        "hovermode": "x unified",
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "legend": {"orientation": "h", "y": -0.18},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "height": 360,
    } | ({"xaxis": DAY_AXIS} if x == "day" else {})


def session_requests_chart(bars: Sequence[RequestBar]) -> Figure:
    """Per request: reported cache read, write and uncached input stacked; predicted read as a line.

    Material misses are marked above their bar. Every point carries its request's URL as
    ``customdata`` so a click opens the request.
    """
    x = [bar.ordinal for bar in bars]
    urls = [bar.url for bar in bars]

    def stack(name: str, values: list[int | None], colour: str) -> dict[str, Any]:
        return {
            "type": "bar",
            "name": name,
            "x": x,
            "y": values,
            "customdata": urls,
            "marker": {"color": colour},
            "hovertemplate": "%{y:,} tokens<extra>" + name + "</extra>",
        }

    traces: list[dict[str, Any]] = [
        stack("cache read", [bar.read for bar in bars], READ_COLOUR),
        stack("cache write", [bar.write for bar in bars], WRITE_COLOUR),
        stack("uncached input", [bar.uncached for bar in bars], UNCACHED_COLOUR),
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "predicted read",
            "x": x,
            "y": [bar.predicted_read for bar in bars],
            "customdata": urls,
            "line": {"color": PREDICTED_COLOUR, "width": 1.5, "dash": "dot"},
            "marker": {"size": 4},
            "connectgaps": False,
            "hovertemplate": "%{y:,} tokens<extra>predicted read</extra>",
        },
    ]
    misses = [bar for bar in bars if bar.material]
    if misses:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "material miss",
                "x": [bar.ordinal for bar in misses],
                "y": [sum(v or 0 for v in (bar.read, bar.write, bar.uncached)) for bar in misses],
                "customdata": [bar.url for bar in misses],
                "text": [bar.label or "miss" for bar in misses],
                "marker": {"symbol": "triangle-down", "size": 11, "color": UNCACHED_COLOUR},
                "hovertemplate": "%{text}<extra>material miss</extra>",
            }
        )
    return {"data": traces, "layout": _layout("Prompt tokens per request", y="tokens")}


def session_cacheability_chart(bars: Sequence[CacheabilityBar]) -> Figure:
    """Per request: the prefix shared with the previous request by tier, and the tokens not shared.

    A stable system prompt and tool list show as a tall shared base; a per-turn change in the
    system prompt shows as a red bar that covers the whole history.
    """
    x = [bar.ordinal for bar in bars]
    urls = [bar.url for bar in bars]
    traces: list[dict[str, Any]] = [
        {
            "type": "bar",
            "name": f"{tier} shared",
            "x": x,
            "y": [bar.shared.get(tier, 0) for bar in bars],
            "customdata": urls,
            "marker": {"color": colour},
            "hovertemplate": "%{y:,} tokens<extra>" + tier + " shared</extra>",
        }
        for tier, colour in TIER_COLOURS.items()
    ]
    traces.append(
        {
            "type": "bar",
            "name": "not shared",
            "x": x,
            "y": [bar.rest for bar in bars],
            "customdata": urls,
            "marker": {"color": NOT_SHARED_COLOUR},
            "hovertemplate": "%{y:,} tokens<extra>not shared</extra>",
        }
    )
    return {"data": traces, "layout": _layout("Cacheable prefix per request", y="tokens")}


def fleet_hit_rate_chart(days: Sequence[tuple[date, float | None, int]]) -> Figure:
    """Fleet cache hit rate per day (``(day, hit rate, prompt tokens)``), as a line over the days."""
    layout = _layout("Cache hit rate per day", y="hit rate", x="day")
    layout["yaxis"] = {"title": {"text": "hit rate"}, "tickformat": ".0%", "range": [0, 1]}
    layout["hovermode"] = "closest"
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "hit rate",
                "x": [day.isoformat() for day, _, _ in days],
                "y": [rate for _, rate, _ in days],
                "text": [f"{tokens:,} prompt tokens" for _, _, tokens in days],
                "line": {"color": READ_COLOUR},
                "hovertemplate": "%{y:.1%} · %{text}<extra></extra>",
            }
        ],
        "layout": layout,
    }


# --- context breakdown over a session ----------------------------------------------------------------

SYSTEM_COLOUR = "#2456a6"
TOOLS_COLOUR = "#6b4fa1"
MESSAGES_COLOUR = "#2f8f5b"
INFERRED_COLOUR = "#9aa5b1"
PROVIDER_COLOUR = "#c2413b"
WINDOW_COLOUR = "#17212e"
COMPACT_COLOUR = "#d08a1e"
MARKER_SYMBOLS = {"compaction": "triangle-down", "prune": "x"}
INFERRED_NAME = "system + tools (inferred)"
FAR_ABOVE = 1.5
"""A limit more than this many times the largest figure is named above the chart, not drawn: a
200k-token context drawn on a 1M axis would be a flat line at the bottom."""
HEADROOM = 1.12

SHORT_LOG_EVENTS = 15
"""Up to this many events on the x axis, every seq gets its own tick."""


def session_breakdown_chart(series: BreakdownSeries) -> Figure:
    """System prompt, tools and messages stacked over the session (or, where the log cannot tell
    system from tools, one inferred band), the provider-reported prompt as a line, the context window
    and the host's auto-compact point as limits, and a marker at every compaction and prune.

    The y axis fits the data. A limit far above it (:data:`FAR_ABOVE`) is named in an annotation at
    the top instead of being drawn, so the context stays readable. The x axis starts as event seq; a
    menu switches every trace to event time. Points are steps (``hv``): a figure holds until the next
    point, because only changes are kept.
    """
    points = series.points
    seqs = [point.seq for point in points]
    times = [_iso(point.time) for point in points]

    def line(name: str, values: list[int | None], colour: str, **extra: Any) -> dict[str, Any]:
        return {
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": seqs,
            "y": values,
            "line": {"color": colour, "shape": "hv", **extra.pop("line", {})},
            "hovertemplate": "%{y:,} tokens<extra>" + name + "</extra>",
            **extra,
        }

    traces: list[dict[str, Any]] = []
    if any(p.system is not None for p in points):
        traces.append(line("system", [p.system for p in points], SYSTEM_COLOUR, stackgroup="context"))
        traces.append(line("tools", [p.tools for p in points], TOOLS_COLOUR, stackgroup="context"))
    traces.append(line("messages", [p.messages for p in points], MESSAGES_COLOUR, stackgroup="context"))
    if any(p.inferred is not None for p in points):
        traces.append(
            line(INFERRED_NAME, [p.inferred for p in points], INFERRED_COLOUR, stackgroup="context")
        )
    provider = [p.provider for p in points]
    if any(value is not None for value in provider):
        traces.append(
            line(
                "provider-reported prompt",
                provider,
                PROVIDER_COLOUR,
                mode="lines+markers",
                marker={"size": 4},
                connectgaps=True,
                line={"dash": "dash", "shape": "linear"},
            )
        )
    top = max([p.used for p in points] + [v for v in provider if v is not None] + [1])
    window = series.now.window if series.now is not None else None
    limits = [
        (name, value, colour)
        for name, value, colour in (
            ("context window", window, WINDOW_COLOUR),
            ("auto-compact", series.auto_compact, COMPACT_COLOUR),
        )
        if value
    ]
    drawn = [(name, value, colour) for name, value, colour in limits if value <= top * FAR_ABOVE]
    for name, value, colour in drawn:
        traces.append(line(name, [value] * len(points), colour, line={"dash": "dot"}))
    x_by_time: list[list[str | None]] = [times for _ in traces]
    markers = series.markers
    if markers:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "compactions and prunes",
                "x": [m.seq for m in markers],
                "y": _heights_at([m.seq for m in markers], points),
                "text": [_marker_text(m) for m in markers],
                "marker": {
                    "symbol": [MARKER_SYMBOLS.get(m.kind, "circle") for m in markers],
                    "size": 11,
                    "color": WINDOW_COLOUR,
                },
                "hovertemplate": "%{text}<extra></extra>",
            }
        )
        x_by_time.append([_iso(m.time) for m in markers])
    x_by_seq = [trace["x"] for trace in traces]
    layout = _layout("Context breakdown", y="tokens", x="event seq")
    layout.pop("barmode")
    layout["hovermode"] = "closest"
    # Seqs are whole numbers: on a short log, Plotly's automatic ticks would fall between them.
    seqs = [seq for xs in x_by_seq for seq in xs if isinstance(seq, int)]
    if seqs and max(seqs) - min(seqs) <= SHORT_LOG_EVENTS:
        layout["xaxis"] = {**layout["xaxis"], "dtick": 1}
    ceiling = max([top] + [value for _, value, _ in drawn]) * HEADROOM
    layout["yaxis"] = {"title": {"text": "tokens"}, "range": [0, ceiling], "rangemode": "tozero"}
    # Below the axis title, which the shared layout's legend position would cover.
    layout["legend"] = {"orientation": "h", "y": -0.26}
    layout["margin"] = {**layout["margin"], "b": 70}
    far = [(name, value) for name, value, _ in limits if value > top * FAR_ABOVE]
    if far:
        used = series.now.used if series.now is not None else 0
        text = " · ".join(f"{name} {value:,} tokens" for name, value in far)
        if window and ("context window", window) in far:
            text += f" — {used / window:.0%} used; far above this scale"
        layout["annotations"] = [
            {
                "text": "↑ " + text,
                "xref": "paper",
                "yref": "paper",
                # Inside the headroom above the data, clear of the title.
                "x": 0.01,
                "y": 0.995,
                "xanchor": "left",
                "yanchor": "top",
                "bgcolor": "rgba(255,255,255,0.85)",
                "showarrow": False,
                "font": {"size": 12, "color": WINDOW_COLOUR},
            }
        ]
    layout["updatemenus"] = [
        {
            "type": "buttons",
            "direction": "right",
            "x": 1,
            "xanchor": "right",
            "y": 1.15,
            "buttons": [
                {
                    "label": "by event",
                    "method": "update",
                    "args": [{"x": x_by_seq}, {"xaxis.title.text": "event seq", "xaxis.type": "linear"}],
                },
                {
                    "label": "by time",
                    "method": "update",
                    "args": [{"x": x_by_time}, {"xaxis.title.text": "time", "xaxis.type": "date"}],
                },
            ],
        }
    ]
    return {"data": traces, "layout": layout}


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _heights_at(seqs: list[int], points: Sequence[BreakdownPoint]) -> list[int]:
    """The stacked total in force at each seq (the last point at or before it)."""
    heights = []
    index = 0
    total = 0
    for seq in seqs:
        while index < len(points) and points[index].seq <= seq:
            total = points[index].used
            index += 1
        heights.append(total)
    return heights


def _marker_text(marker: ReplacementMarker) -> str:
    lines = [f"{marker.kind} at seq {marker.seq}"]
    if marker.shadowed_start is not None:
        lines.append(f"shadowed range {marker.shadowed_start}..{marker.shadowed_end}")
    if marker.shadowed_tokens is not None:
        lines.append(f"shadowed tokens {marker.shadowed_tokens:,}")
    usage = marker.usage
    if isinstance(usage, dict):
        parts = [
            f"{label} {usage[name]:,}"
            for name, label in (
                ("inputTokens", "input"),
                ("cacheReadTokens", "read"),
                ("cacheWriteTokens", "write"),
                ("outputTokens", "output"),
            )
            if isinstance(usage.get(name), int)
        ]
        if parts:
            lines.append("summarizer " + ", ".join(parts))
    return "<br>".join(lines)


# --- fleet by source -------------------------------------------------------------------------------------

SOURCE_COLOURS = ("#2456a6", "#2f8f5b", "#d08a1e", "#c2413b", "#6b4fa0", "#3a8fa8", "#8a6d3b", "#5f6b7a")


def fleet_sources_chart(days: Sequence[tuple[date, str, int, float | None]]) -> Figure:
    """Uncached input per day as bars stacked by source, and each source's hit rate as a line.

    ``days`` holds ``(day, source, uncached tokens, hit rate)`` rows.
    """
    sources = sorted({source for _, source, _, _ in days})
    data: list[dict[str, Any]] = []
    for index, source in enumerate(sources):
        rows = [row for row in days if row[1] == source]
        colour = SOURCE_COLOURS[index % len(SOURCE_COLOURS)]
        x = [day.isoformat() for day, _, _, _ in rows]
        data.append(
            {
                "type": "bar",
                "name": f"{source} uncached",
                "x": x,
                "y": [uncached for _, _, uncached, _ in rows],
                "marker": {"color": colour},
                "hovertemplate": f"{source}: %{{y:,}} uncached tokens<extra></extra>",
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{source} hit rate",
                "x": x,
                "y": [rate for _, _, _, rate in rows],
                "yaxis": "y2",
                "line": {"color": colour, "dash": "dot"},
                "hovertemplate": f"{source}: %{{y:.1%}} hit rate<extra></extra>",
            }
        )
    layout = _layout("Uncached input and hit rate per day, by source", y="uncached tokens", x="day")
    layout["hovermode"] = "closest"
    layout["yaxis2"] = {"overlaying": "y", "side": "right", "range": [0, 1], "tickformat": ".0%"}
    return {"data": data, "layout": layout}


def warnings_by_kind_chart(kinds: Sequence[tuple[str, int]]) -> Figure:
    """How many times each kind of self-check warning was seen, across the fleet."""
    layout = _layout("Warnings by kind", y="times seen", x="kind")
    layout["hovermode"] = "closest"
    return {
        "data": [
            {
                "type": "bar",
                "x": [kind for kind, _ in kinds],
                "y": [count for _, count in kinds],
                "marker": {"color": "#b7791f"},
                "hovertemplate": "%{x}: %{y:,}<extra></extra>",
            }
        ],
        "layout": layout,
    }
