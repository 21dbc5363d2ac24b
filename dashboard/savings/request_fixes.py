"""What each fix would do to one request: its usage and cost under every supported scenario of its
session's replay, beside the request as recorded by the same rules.

Read from the session's stored figures (``SessionSavings.request_tokens``), never replayed for a
page view: a request's figures depend on every request before it in its session.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dashboard.costs.pricing import prices_load
from dashboard.models import Request, SessionSavings
from projections.cache.whatif.scenarios import AS_RECORDED, BEST
from projections.money import Price, Tokens, price_match, saving, usage_cost


@dataclass(frozen=True, slots=True)
class RequestFix:
    """One scenario's figures for the request."""

    scenario: str
    combination: tuple[str, ...]
    tokens: Tokens
    cost: Decimal | None
    saving: Decimal | None
    """The request's cost as recorded by the rules minus its cost under the scenario."""
    changed: bool
    """Whether the request's usage under the scenario differs from its usage as recorded (a
    scenario may move its markers and still read and write the same)."""


@dataclass(frozen=True, slots=True)
class RequestFixes:
    """The request as the rules price it, and under each supported scenario, the most saved first."""

    recorded: RequestFix
    fixes: list[RequestFix]

    @property
    def changed(self) -> int:
        """How many scenarios change this request's usage."""
        return sum(fix.changed for fix in self.fixes)


def request_fixes(call: Request) -> RequestFixes | None:
    """The request's figures by scenario; ``None`` when its session has none kept, or none for it
    (a session whose figures predate them, or a request the replay could not take)."""
    savings = (
        SessionSavings.objects.filter(session_id=call.session_id, error="")
        .only("request_tokens", "results")
        .first()
    )
    if savings is None:
        return None
    by_scenario = savings.request_tokens or {}
    recorded_tokens = by_scenario.get(AS_RECORDED, {}).get(call.key)
    if recorded_tokens is None:
        return None
    price = price_match(model=call.model, prices=prices_load())
    recorded = _fix(AS_RECORDED, (), Tokens(*recorded_tokens), None, price, changed=False)
    fixes = []
    for result in savings.results:
        name = str(result.get("scenario", ""))
        if name == AS_RECORDED or not result.get("supported") or name not in by_scenario:
            continue
        combination = result.get("combination")
        changed = by_scenario[name].get(call.key)
        tokens = Tokens(*changed) if changed is not None else recorded.tokens
        fixes.append(
            _fix(
                name,
                tuple(str(n) for n in combination) if isinstance(combination, list) else (),
                tokens,
                recorded.cost,
                price,
                changed=changed is not None,
            )
        )
    fixes.sort(key=lambda fix: (-(fix.saving or 0), fix.scenario != BEST, fix.scenario))
    return RequestFixes(recorded=recorded, fixes=fixes)


def _fix(
    name: str,
    combination: tuple[str, ...],
    tokens: Tokens,
    recorded_cost: Decimal | None,
    price: Price | None,
    *,
    changed: bool,
) -> RequestFix:
    cost = usage_cost(tokens=tokens, price=price) if price is not None else None
    return RequestFix(
        scenario=name,
        combination=combination,
        tokens=tokens,
        cost=cost,
        saving=saving(recorded_cost, cost) if recorded_cost is not None and cost is not None else None,
        changed=changed,
    )
