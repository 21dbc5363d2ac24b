"""Plotly figure dicts for the pages; the only module that knows about plotly's figure format.

Figures are built as plain JSON-ready dicts, passed to the page with the ``chart_json`` filter and drawn by a
small script in ``static/js/``. The session's context breakdown chart, the largest, has its own
module, ``dashboard.sessions.breakdown_chart``, and so do the overview's charts over time,
``dashboard.fleet.charts``; both build on this one's layout.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Figure = dict[str, Any]


def plotly_text(text: str) -> str:
    """``text`` as Plotly shows it literally in a trace name, a legend or a hovertemplate.

    Plotly reads a few HTML tags there (``<b>``, ``<a href>``), fills ``%{...}`` fields in a
    template and decodes entities, so a source name such as ``<a href=...>`` or ``%{y}`` from the
    command line would draw a link or a figure; as entities it draws as written.
    """
    return html.escape(text, quote=False).replace("%", "&#37;")


READ_COLOUR = "#2f8f5b"
WRITE_COLOUR = "#d08a1e"
UNCACHED_COLOUR = "#c2413b"
PREDICTED_COLOUR = "#17212e"
TIER_COLOURS = {"tools": "#6b4fa1", "system": "#2456a6", "messages": "#2f8f5b"}
NOT_SHARED_COLOUR = "#c2413b"


@dataclass(frozen=True, slots=True)
class RequestBar:
    """One request of a session as the requests chart shows it."""

    number: int
    """The request's place in its session, from 1, as every page numbers requests."""
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

    number: int
    url: str
    shared: dict[str, int]
    rest: int


def base_layout(title: str, *, y: str, x: str = "request") -> dict[str, Any]:
    """The layout every chart starts from: its title, stacked bars, axis titles and legend."""
    return {
        "title": {"text": title, "font": {"size": 14}},
        "barmode": "stack",
        "hovermode": "x unified",
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "legend": {"orientation": "h", "y": -0.18},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "height": 360,
    }


SMALL_COUNT = 10
"""Up to this count, a count axis ticks at every whole number: Plotly's own ticks would fall
between them, and an integer format alone would then repeat labels (0, 0, 1, 1)."""


def count_axis(title: str, largest: int) -> dict[str, Any]:
    """A y axis for whole counts up to ``largest``: ticks on whole numbers only, from zero."""
    axis: dict[str, Any] = {"title": {"text": title}, "tickformat": ",d", "rangemode": "tozero"}
    if largest <= SMALL_COUNT:
        axis.update(tick0=0, dtick=1)
    return axis


def session_requests_chart(bars: Sequence[RequestBar]) -> Figure:
    """Per request: reported cache read, write and uncached input stacked; predicted read as a line.

    Material misses are marked above their bar. Every point carries its request's URL as
    ``customdata`` so a click opens the request.
    """
    x = [bar.number for bar in bars]
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
                "x": [bar.number for bar in misses],
                "y": [sum(v or 0 for v in (bar.read, bar.write, bar.uncached)) for bar in misses],
                "customdata": [bar.url for bar in misses],
                "text": [bar.label or "miss" for bar in misses],
                "marker": {"symbol": "triangle-down", "size": 11, "color": UNCACHED_COLOUR},
                "hovertemplate": "%{text}<extra>material miss</extra>",
            }
        )
    return {"data": traces, "layout": base_layout("Prompt tokens per request", y="tokens")}


def session_cacheability_chart(bars: Sequence[CacheabilityBar]) -> Figure:
    """Per request: the prefix shared with the previous request by tier, and the tokens not shared.

    A stable system prompt and tool list show as a tall shared base; a per-turn change in the
    system prompt shows as a red bar that covers the whole history.
    """
    x = [bar.number for bar in bars]
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
    return {"data": traces, "layout": base_layout("Cacheable prefix per request", y="tokens")}


def warnings_by_kind_chart(kinds: Sequence[tuple[str, int]]) -> Figure:
    """How many times each kind of self-check warning was seen, across the fleet."""
    layout = base_layout("Warnings by kind", y="times seen", x="kind")
    layout["yaxis"] = count_axis("times seen", max((count for _, count in kinds), default=0))
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
