"""Which instants come from an agent's wall clock, and so may date a session.

Outside :mod:`projections.formats` because the dashboard asks it of every moment it shows, and the
formats package imports every reader.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeGuard

WALL_CLOCK_FROM = datetime(2000, 1, 1, tzinfo=UTC)
"""Instants before this come from a test clock counting up from the epoch (the harness's snapshots
write ``createdAt: 0`` and events at 0 ms, 1 ms, ...), never from an agent's wall clock: such an
instant dates no session, and an ingest keeps it as unknown."""

AHEAD_OF_NOW = timedelta(days=1)
"""How far past the ingest's own clock an instant may lie: a host's clock running a few hours fast
is a host's clock; one a year ahead (a line dated 9999) is not, and would move every window to it."""


def is_wall_clock(moment: datetime | None) -> TypeGuard[datetime]:
    """Whether ``moment`` may date a session (see :data:`WALL_CLOCK_FROM`)."""
    return moment is not None and moment >= WALL_CLOCK_FROM


def plausible_span(*, now: datetime) -> tuple[datetime, datetime]:
    """The first and last instant an agent's log may plausibly hold when read at ``now``."""
    return WALL_CLOCK_FROM, now + AHEAD_OF_NOW


def implausibility(moment: datetime, *, now: datetime) -> str:
    """Why ``moment`` cannot be an agent's wall-clock time read at ``now``; empty when it can be."""
    earliest, latest = plausible_span(now=now)
    if moment < earliest:
        return f"before {earliest.year}"
    if moment > latest:
        return f"more than a day after {now.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return ""
