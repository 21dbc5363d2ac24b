"""How every page writes a share as a percentage, in its text and in its charts' notes alike."""

from __future__ import annotations


def percent_text(value: float | None) -> str:
    """0.00225 → '0.2%'; None → '—' (unknown is not zero)."""
    if value is None:
        return "—"
    return f"{value * 100:.1f}%"
