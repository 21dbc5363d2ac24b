"""Whether a rule's condition holds for each slice: the metric in both windows, what it costs a day,
and the causes of the misses behind it.

A slice's baseline is the slice itself over the baseline window when it has enough eligible requests
there. A client release or a model that is new in the current window has none: its baseline is then
what its source ran before (every release and model of that source; the whole fleet for a rule not
sliced by source), which is what "the new release dropped the hit rate" compares against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from dashboard.alerts.figures import Cell, Figures, FleetFigures, write_rate
from dashboard.costs.pricing import MILLION, ZERO, Price, Tokens, price_match
from dashboard.models import AlertRule

TOP_CAUSES = 3


@dataclass(frozen=True, slots=True)
class SliceValues:
    """The values of a rule's dimensions; a dimension the rule does not slice by is ``None``."""

    source: str | None = None
    client_version: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, cell: Cell, dimensions: Sequence[str]) -> SliceValues:
        source, version, model = cell
        return cls(
            source if "source" in dimensions else None,
            version if "client_version" in dimensions else None,
            model if "model" in dimensions else None,
        )

    @property
    def key(self) -> str:
        """Stable text naming the slice, for the one-open-alert-per-slice constraint."""
        return "|".join(
            f"{name}={value}"
            for name, value in (
                ("source", self.source),
                ("client_version", self.client_version),
                ("model", self.model),
            )
            if value is not None
        )

    def holds(self, cell: Cell) -> bool:
        source, version, model = cell
        return (
            (self.source is None or self.source == source)
            and (self.client_version is None or self.client_version == version)
            and (self.model is None or self.model == model)
        )

    def broadened(self) -> SliceValues:
        """The slice without its release and model: what its source ran, whatever the release."""
        return SliceValues(self.source)


@dataclass(frozen=True, slots=True)
class Condition:
    """One rule judged for one slice."""

    rule: AlertRule
    values: SliceValues
    holds: bool
    baseline: float | None
    current: float | None
    baseline_plain: float | None
    current_plain: float | None
    baseline_requests: int
    current_requests: int
    baseline_scope: str
    extra_cost_usd_per_day: Decimal
    top_causes: list[dict[str, object]]
    sessions: int


def slice_conditions(*, rule: AlertRule, fleet: FleetFigures, prices: Sequence[Price]) -> list[Condition]:
    """The rule judged for every slice that has requests in the current window."""
    dimensions = rule.dimensions
    slices = {SliceValues.of(cell, dimensions) for cell in fleet.current}
    return [
        slice_condition(rule=rule, values=values, fleet=fleet, prices=prices)
        for values in sorted(slices, key=lambda v: v.key)
    ]


def slice_condition(
    *, rule: AlertRule, values: SliceValues, fleet: FleetFigures, prices: Sequence[Price]
) -> Condition:
    """The rule judged for one slice."""
    current = _summed(fleet.current, values)
    baseline = _summed(fleet.baseline, values)
    scope = ""
    if baseline.eligible < rule.min_requests and (
        values.client_version is not None or values.model is not None
    ):
        broader = values.broadened()
        baseline = _summed(fleet.baseline, broader)
        scope = (
            f"{broader.source}, every release and model" if broader.source is not None else "the whole fleet"
        )
    enough = current.eligible >= rule.min_requests and baseline.eligible >= rule.min_requests
    base_value, current_value = (
        _metric(rule, baseline, fleet.windows.baseline_days),
        _metric(rule, current, fleet.windows.current_days),
    )
    holds = (
        enough
        and base_value is not None
        and current_value is not None
        and _crossed(rule, base_value, current_value)
    )
    if rule.metric == AlertRule.Metric.MISS_COST:
        extra = Decimal(str(max(0.0, (current_value or 0.0) - (base_value or 0.0))))
    else:
        extra = extra_cost_per_day(
            current=current,
            baseline_hit_rate=baseline.hit_rate,
            days=fleet.windows.current_days,
            prices=prices,
        )
    return Condition(
        rule=rule,
        values=values,
        holds=holds,
        baseline=base_value,
        current=current_value,
        baseline_plain=baseline.plain_hit_rate,
        current_plain=current.plain_hit_rate,
        baseline_requests=baseline.eligible,
        current_requests=current.eligible,
        baseline_scope=scope,
        extra_cost_usd_per_day=extra,
        top_causes=top_causes(current),
        sessions=len(current.sessions),
    )


def extra_cost_per_day(
    *, current: Figures, baseline_hit_rate: float | None, days: Decimal, prices: Sequence[Price]
) -> Decimal:
    """What the current window's eligible requests cost a day beyond what they would at the
    baseline's hit rate: per model, the tokens they would have read and did not, at the rate their
    writes were billed at less the read price."""
    if baseline_hit_rate is None or days <= 0:
        return ZERO
    rate = Decimal(str(baseline_hit_rate))
    total = ZERO
    for model, (uncached, read, write_5m, write_1h) in current.eligible_tokens.items():
        price = price_match(model=model, prices=prices)
        if price is None:
            continue
        prompt = uncached + read + write_5m + write_1h
        short = rate * prompt - read
        if short <= 0:
            continue
        billed = write_rate(Tokens(uncached, read, write_5m, write_1h), price)
        total += short * (billed - price.cache_read) / MILLION
    return total / days


def top_causes(figures: Figures) -> list[dict[str, object]]:
    """The causes of the window's misses, the costliest in re-processed tokens first, with their share."""
    total = sum(figures.missed_tokens.values())
    if not total:
        return []
    return [
        {
            "cause": cause,
            "share": round(tokens / total, 4),
            "requests": figures.missed_requests[cause],
            "tokens": tokens,
        }
        for cause, tokens in figures.missed_tokens.most_common(TOP_CAUSES)
    ]


def _summed(cells: Mapping[Cell, Figures], values: SliceValues) -> Figures:
    total = Figures()
    for cell, figures in cells.items():
        if values.holds(cell):
            total.add(figures)
    return total


def _metric(rule: AlertRule, figures: Figures, days: Decimal) -> float | None:
    if rule.metric == AlertRule.Metric.HIT_RATE:
        return figures.hit_rate
    if rule.metric == AlertRule.Metric.CAUSE_SHARE:
        return figures.cause_share(rule.cause)
    return float(figures.miss_cost / days) if days > 0 else None


def _crossed(rule: AlertRule, baseline: float, current: float) -> bool:
    """Whether the metric moved by the rule's threshold the bad way."""
    threshold = float(rule.threshold)
    if rule.metric == AlertRule.Metric.HIT_RATE:
        return (baseline - current) * 100 >= threshold
    if rule.metric == AlertRule.Metric.CAUSE_SHARE:
        return (current - baseline) * 100 >= threshold
    return current - baseline >= threshold
