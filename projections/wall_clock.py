"""Which instants come from an agent's wall clock, and so may date a session.

Outside :mod:`projections.formats` because the dashboard asks it of every moment it shows, and the
formats package imports every reader.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeGuard

WALL_CLOCK_FROM = datetime(2000, 1, 1, tzinfo=UTC)
"""Instants before this come from a test clock counting up from the epoch (the harness's snapshots
write ``createdAt: 0`` and events at 0 ms, 1 ms, ...), never from an agent's wall clock: such an
instant is kept on its event, as the log wrote it, but dates no session."""


def is_wall_clock(moment: datetime | None) -> TypeGuard[datetime]:
    """Whether ``moment`` may date a session (see :data:`WALL_CLOCK_FROM`)."""
    return moment is not None and moment >= WALL_CLOCK_FROM
