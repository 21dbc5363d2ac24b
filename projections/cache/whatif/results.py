"""What a scenario comes to: its usage, its cost, its saving, by group, and as plain JSON.

:meth:`ScenarioResult.to_json` is the object ``manage.py whatif --json`` prints and a session's
export carries: ``scenario``, ``supported``, ``reason``, ``requests``, ``uncached_tokens``,
``read_tokens``, ``write_tokens``, ``cost_usd`` (the whole session at list price, input side and
output), and beside them the write buckets, the output, the saving, the requests the scenario
changes, what to change, and for ``as-recorded`` the provider's reported figures and the rules'
error against them. Money is a JSON number of dollars; an unsupported scenario's figures are null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from projections.cache.whatif.tally import GroupKey, Tally, group_cost
from projections.money import Price, Tokens, saving
from projections.normalized import JSON

USD_PLACES = Decimal("0.00000001")
"""Dollars to eight places, as the store keeps a cost."""


@dataclass(frozen=True, slots=True)
class GroupSaving:
    """One group of a scenario's requests (model, client release, recorded miss cause): what they
    cost as recorded and under the scenario."""

    key: GroupKey
    requests: int
    touched: int
    recorded_cost: Decimal
    cost: Decimal

    @property
    def saving(self) -> Decimal:
        """What the scenario saves on these requests (negative: it costs more)."""
        return saving(self.recorded_cost, self.cost)


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """One scenario over one session (see the module)."""

    scenario: str
    supported: bool
    reason: str
    change: str
    """What to do to get the saving; empty for the recorded requests."""
    requests: int
    touched: int = 0
    """Requests the scenario sends otherwise than recorded."""
    tokens: Tokens | None = None
    cost: Decimal | None = None
    saving: Decimal | None = None
    recorded_cost: Decimal | None = None
    """The recorded requests' cost by the same rules, which the saving is measured from."""
    combination: tuple[str, ...] = ()
    """For ``best``: the scenarios it combines (none: no supported change saves anything)."""
    groups: tuple[GroupSaving, ...] = ()
    reported_tokens: Tokens | None = None
    """For ``as-recorded``: the usage the provider reported."""
    reported_cost: Decimal | None = None
    by_request: Mapping[str, Tokens] = field(default_factory=dict)
    """Each request's usage under the scenario, by its key; empty where it is not supported. Not
    in :meth:`to_json`: a session's figures per request are kept apart from its totals."""

    @property
    def saving_share(self) -> float | None:
        """The saving as a share of the recorded cost; ``None`` where either is unknown or zero."""
        if self.saving is None or not self.recorded_cost:
            return None
        return float(self.saving / self.recorded_cost)

    def to_json(self) -> dict[str, JSON]:
        """The result as plain JSON (see the module)."""
        tokens = self.tokens
        out: dict[str, JSON] = {
            "scenario": self.scenario,
            "supported": self.supported,
            "reason": self.reason,
            "requests": self.requests,
            "uncached_tokens": tokens.uncached_input if tokens else None,
            "read_tokens": tokens.cache_read if tokens else None,
            "write_tokens": tokens.written if tokens else None,
            "cost_usd": usd(self.cost),
            "write_5m_tokens": tokens.cache_write_5m if tokens else None,
            "write_1h_tokens": tokens.cache_write_1h if tokens else None,
            "output_tokens": tokens.output if tokens else None,
            "saving_usd": usd(self.saving),
            "saving_share": None if self.saving_share is None else round(self.saving_share, 6),
            "touched_requests": self.touched if self.supported else None,
            "change": self.change,
        }
        if self.scenario == "best":
            out["combination"] = list(self.combination)
        if self.reported_tokens is not None:
            reported = self.reported_tokens
            out["reported"] = {
                "uncached_tokens": reported.uncached_input,
                "read_tokens": reported.cache_read,
                "write_tokens": reported.written,
                "cost_usd": usd(self.reported_cost),
            }
            error = (
                None if self.cost is None or self.reported_cost is None else self.cost - self.reported_cost
            )
            out["rules_error_usd"] = usd(error)
        return out


def usd(value: Decimal | None) -> float | None:
    """Dollars as a JSON number, to eight places; ``None`` stays ``None``."""
    return None if value is None else float(value.quantize(USD_PLACES))


def priced(
    name: str,
    tally: Tally,
    recorded: Tally,
    prices: list[Price],
    *,
    supported: bool,
    reason: str,
    change: str,
    combination: tuple[str, ...] = (),
) -> ScenarioResult:
    """The result of a scenario whose world summed ``tally``, measured from ``recorded``."""
    if not supported:
        return ScenarioResult(name, False, reason, change, tally.requests, combination=combination)
    groups = tuple(
        GroupSaving(
            key,
            group.requests,
            group.touched,
            group_cost(key, recorded.groups[key], prices),
            group_cost(key, group, prices),
        )
        for key, group in sorted(tally.groups.items())
    )
    cost = sum((g.cost for g in groups), Decimal(0))
    recorded_cost = sum((g.recorded_cost for g in groups), Decimal(0))
    return ScenarioResult(
        name,
        True,
        reason,
        change,
        tally.requests,
        touched=tally.touched,
        tokens=tally.tokens(),
        cost=cost,
        saving=saving(recorded_cost, cost),
        recorded_cost=recorded_cost,
        combination=combination,
        groups=groups,
        by_request=tally.by_request,
    )
