"""The context breakdown chart of a session: system prompt, tools and messages stacked per event seq.

Its own module because it is the one chart with markers, limits drawn or named, and a time/seq
switch; the shared layout and the ``Figure`` type come from ``dashboard.web.charts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dashboard.web.charts import Figure, base_layout
from dashboard.web.percent import percent_text

if TYPE_CHECKING:
    from dashboard.sessions.breakdown_series import BreakdownPoint, BreakdownSeries, ReplacementMarker

SYSTEM_COLOUR = "#2456a6"
TOOLS_COLOUR = "#6b4fa1"
MESSAGES_COLOUR = "#2f8f5b"
INFERRED_COLOUR = "#9aa5b1"
PROVIDER_COLOUR = "#c2413b"
WINDOW_COLOUR = "#17212e"
COMPACT_COLOUR = "#d08a1e"
RAW_COLOUR = "#5c6670"
MARKER_SYMBOLS = {"compaction": "triangle-down", "prune": "x"}
INFERRED_NAME = "system + tools (inferred)"
RAW_NAME = "raw estimate (4 characters per token)"
FAR_ABOVE = 1.5
"""A limit more than this many times the largest figure is named above the chart, not drawn: a
200k-token context drawn on a 1M axis would be a flat line at the bottom."""
HEADROOM = 1.12

SHORT_LOG_EVENTS = 15
"""Up to this many events on the x axis, every seq gets its own tick."""


def session_breakdown_chart(series: BreakdownSeries) -> Figure:
    """System prompt, tools and messages stacked over the session (or, where the log cannot tell
    system from tools, one inferred band), the provider-reported prompt as a line, the raw estimate
    as a dotted line where the bands were calibrated to the provider's count, the context window
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
    raw = [p.raw for p in points]
    if any(value is not None for value in raw):
        # The bands are calibrated to the provider's count; the estimate they came from stays in view.
        traces.append(line(RAW_NAME, raw, RAW_COLOUR, connectgaps=True, line={"dash": "dot", "width": 1.5}))
    top = max([p.used for p in points] + [v for v in provider + raw if v is not None] + [1])
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
    layout = base_layout("Context breakdown", y="tokens", x="event seq")
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
            # Rounded as the page's own figure beside the chart is, so the two read alike.
            text += f" — {percent_text(used / window)} used; far above this scale"
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
