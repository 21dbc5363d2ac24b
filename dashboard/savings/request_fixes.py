"""What each fix would do to one request: its usage and cost under every supported scenario of its
session's replay, beside the request as recorded by the same rules.

Read from the session's stored figures (``SessionSavings.request_tokens``), never replayed for a
page view: a request's figures depend on every request before it in its session.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models.fields.json import KeyTransform

from dashboard.costs.pricing import prices_load
from dashboard.models import Request, SessionSavings
from projections.cache.whatif.scenarios import AS_RECORDED, BEST, SCENARIO_NAMES
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
    """The request as the rules price it, and under each supported scenario, the most saved first;
    or, with neither, why there are no figures (``unavailable``)."""

    recorded: RequestFix | None
    fixes: list[RequestFix]
    unavailable: str = ""

    @property
    def changed(self) -> int:
        """How many scenarios change this request's usage."""
        return sum(fix.changed for fix in self.fixes)


NOT_YET = "its session's what-if figures are made once the session is analysed"
BEFORE_PER_REQUEST = (
    "its session's what-if figures were made before figures per request were kept: "
    "they are made again when the session is analysed again (manage.py reanalyse)"
)
NOT_REPLAYED = "the replay did not take this request (no usage was reported for it)"


def request_fixes(call: Request) -> RequestFixes:
    """The request's figures by scenario, read from its session's stored figures: this request's
    entries only (one query), not the session's whole table."""
    entries = {name: KeyTransform(call.key, KeyTransform(name, "request_tokens")) for name in SCENARIO_NAMES}
    row = (
        SessionSavings.objects.filter(session_id=call.session_id)
        .values("pk", "error", "results", **{f"tokens_{n}": e for n, e in enumerate(entries.values())})
        .first()
    )
    if row is None:
        return RequestFixes(None, [], NOT_YET)
    if row["error"]:
        return RequestFixes(None, [], f"its session has no what-if figures: {row['error']}")
    tokens = {name: _tokens(row[f"tokens_{n}"]) for n, name in enumerate(entries)}
    recorded_tokens = tokens[AS_RECORDED]
    if recorded_tokens is None:
        kept = SessionSavings.objects.filter(pk=row["pk"], request_tokens__has_key=AS_RECORDED).exists()
        return RequestFixes(None, [], NOT_REPLAYED if kept else BEFORE_PER_REQUEST)
    price = price_match(model=call.model, prices=prices_load())
    recorded = _fix(AS_RECORDED, (), recorded_tokens, None, price, changed=False)
    fixes = []
    for result in row["results"] if isinstance(row["results"], list) else []:
        name = result.get("scenario") if isinstance(result, dict) else None
        if name not in entries or name == AS_RECORDED or not result.get("supported"):
            continue
        combination = result.get("combination")
        changed = tokens[name]
        fixes.append(
            _fix(
                name,
                tuple(str(n) for n in combination) if isinstance(combination, list) else (),
                changed if changed is not None else recorded.tokens,
                recorded.cost,
                price,
                changed=changed is not None,
            )
        )
    fixes.sort(key=lambda fix: (-(fix.saving or 0), fix.scenario != BEST, fix.scenario))
    return RequestFixes(recorded, fixes)


def _tokens(value: object) -> Tokens | None:
    """A stored entry as usage; ``None`` for none, or for one not of the shape the refresh writes."""
    if not isinstance(value, list) or len(value) != len(Tokens._fields):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        return None
    return Tokens(*value)


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
