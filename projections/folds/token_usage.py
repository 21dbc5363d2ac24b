"""``tokenUsage``: provider-reported token totals of a session, by bucket (DESIGN §5).

Reports come from ``assistant/message`` usage (one per provider call of the main chain) and
``compaction/summary`` usage (the compaction call). A second report for the same turn and step (or the
same compaction) replaces the first: both describe one provider call, and counting both would count
the call twice.

Only the latest report is kept in the state, so a second report is recognised when no other call
reported in between. That keeps the state constant-size; a report for an older step counts anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from projections.events import UsageReport, report_key, usage_of
from projections.folds.projection import Projection
from projections.normalized import JSON, EventRecord

KEY = "tokenUsage"

Buckets = tuple[int, int, int, int, int]
"""uncached input, cache read, cache write, its 1-hour share, output."""
_REPORTING_TYPES = frozenset({"assistant/message", "compaction/summary"})


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Totals over every counted report."""

    uncached_input: int
    cache_read: int
    cache_write: int
    cache_write_1h: int
    output: int
    reports: int

    @property
    def prompt_total(self) -> int:
        """Every prompt token processed: uncached + read + writes."""
        return self.uncached_input + self.cache_read + self.cache_write

    def to_json(self) -> JSON:
        """The view as served, in the harness's own field names (``inputTokens`` is the uncached part)."""
        return {
            "inputTokens": self.uncached_input,
            "cacheReadTokens": self.cache_read,
            "cacheWriteTokens": self.cache_write,
            "cacheWrite1hTokens": self.cache_write_1h,
            "outputTokens": self.output,
            "reports": self.reports,
        }


class TokenUsageState(NamedTuple):
    """Running totals and the latest report, which a correction would replace."""

    totals: Buckets
    reports: int
    last_key: str | None
    last: Buckets | None


def _buckets(report: UsageReport) -> Buckets:
    return (
        report.uncached_input,
        report.cache_read,
        report.cache_write,
        report.cache_write_1h,
        report.output,
    )


class TokenUsageV1(Projection[TokenUsageState, TokenUsage]):
    """Provider-reported totals; a repeated report for a step replaces its predecessor."""

    key = KEY
    state_version = 1

    def init(self) -> TokenUsageState:
        """No report yet."""
        return TokenUsageState((0, 0, 0, 0, 0), 0, None, None)

    def apply(self, state: TokenUsageState, event: EventRecord) -> TokenUsageState:
        """Add a report, or swap it for the latest one when it reports the same step."""
        if event.type not in _REPORTING_TYPES:
            return state
        report = usage_of(event)
        if report is None:
            return state
        key = report_key(event)
        buckets = _buckets(report)
        totals = state.totals
        reports = state.reports
        if key == state.last_key and state.last is not None:
            totals = _minus(totals, state.last)
        else:
            reports += 1
        return TokenUsageState(_plus(totals, buckets), reports, key, buckets)

    def view(self, state: TokenUsageState) -> TokenUsage:
        """The totals by bucket and the number of reports counted."""
        return TokenUsage(*state.totals, reports=state.reports)

    def view_json(self, view: TokenUsage) -> JSON:
        """The view as served."""
        return view.to_json()

    def serialize(self, state: TokenUsageState) -> JSON:
        """Totals, report count and the latest report."""
        return {
            "totals": list(state.totals),
            "reports": state.reports,
            "lastKey": state.last_key,
            "last": None if state.last is None else list(state.last),
        }

    def deserialize(self, value: JSON) -> TokenUsageState:
        """The state :meth:`serialize` wrote."""
        last = None if value["last"] is None else _five(value["last"])
        return TokenUsageState(_five(value["totals"]), value["reports"], value["lastKey"], last)


def _five(values: JSON) -> Buckets:
    a, b, c, d, e = values
    return (a, b, c, d, e)


def _plus(a: Buckets, b: Buckets) -> Buckets:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _minus(a: Buckets, b: Buckets) -> Buckets:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4])
