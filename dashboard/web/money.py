"""How every page writes a cost in dollars, in its tables, its notes and its charts alike."""

from __future__ import annotations

from decimal import Decimal


def usd(value: Decimal | float | None) -> str:
    """A cost for display: whole cents from a dollar up, three significant figures below it (two
    below a tenth of a cent), always as a plain decimal: a fraction of a cent reads $0.000081, never
    in scientific notation."""
    if value is None:
        return "—"
    amount = value if isinstance(value, Decimal) else Decimal(str(value))
    if amount == 0:
        return "$0"
    if amount < 0:
        return "-" + usd(-amount)  # a saving that costs more reads -$0.27, not $-0.27
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    figures = 3 if abs(amount) >= Decimal("0.001") else 2
    rounded = amount.quantize(Decimal(1).scaleb(amount.adjusted() - figures + 1))
    text = f"{rounded:f}"
    return "$" + (text.rstrip("0").rstrip(".") if "." in text else text)
