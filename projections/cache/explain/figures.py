"""The cache figures the analysis puts side by side for one request.

Kept apart from the analysis itself so that the pages and the verdict, which only read these
figures, load without the engine that computes them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Figures:
    """The figures side by side; ``None`` where a figure is unknown."""

    credited: int | None
    wire_allows: int | None
    reported_read: int | None
    reported_write: int | None
    predicted_read: int | None
    predicted_write: int | None
