"""The demo dataset's fixed clock: every timestamp derives from one epoch, never from the wall clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

DEMO_EPOCH = datetime(2025, 6, 2, 7, 30, tzinfo=UTC)
"""The instant the first demo session starts."""


def at(offset_s: float) -> datetime:
    """The instant ``offset_s`` seconds after :data:`DEMO_EPOCH`."""
    return DEMO_EPOCH + timedelta(seconds=offset_s)


def iso_z(moment: datetime) -> str:
    """``moment`` as Claude Code writes it: UTC, milliseconds, a trailing ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_micro(moment: datetime) -> str:
    """``moment`` in ISO 8601 with microseconds and no zone, as claude-trace writes ``logged_at``."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def epoch_ms(moment: datetime) -> int:
    """``moment`` as integer epoch milliseconds (the dsh ``time`` field)."""
    return round(moment.timestamp() * 1000)


def epoch_s(moment: datetime) -> float:
    """``moment`` as float epoch seconds (claude-trace ``timestamp`` fields)."""
    return round(moment.timestamp(), 6)


def compact_stamp(moment: datetime) -> str:
    """``moment`` in ISO 8601 basic format (``20250602T073000Z``), safe in a file name."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
