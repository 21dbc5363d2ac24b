"""The instant the page benchmark's generated fleet ends at: every session, job and run it loads is
dated before it, so pages that count back from the newest row see the same fleet on every run.
"""

from __future__ import annotations

from datetime import UTC, datetime

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def pin_wall_clock() -> None:
    """Make the pages' ranges count back from :data:`EPOCH` rather than from today, which would
    leave every range of some length empty (call after ``django.setup()``)."""
    from dashboard.web import time_range

    time_range.wall_clock = lambda: EPOCH
