"""``contextPressure``: how full the context is, by the provider's count and by the surface (DESIGN §5).

The provider's count is exact but only known when a call reports usage; the heuristic surface total
moves with every event. The projection keeps the newest provider total (the **pressure**), the
surface total when it was sampled, and the surface now, so **projected** = pressure + surface -
surface-at-sample carries the exact figure forward by the heuristic change since.

The pressure of an ``assistant/message`` is its prompt total plus its output: the message is on the
surface once the event is folded, so the next call sends what this one read and wrote. Compaction
calls (``compaction/summary`` usage) read a different prompt and are not samples.

The surface total follows the shadow-price protocol: a metered replacement subtracts the claim's
price; an unmetered replacement folds at zero delta, because its shadowed price is unknown without
the node list. A version 0 ``request/header`` system prompt counts on the surface, as in
``contextBreakdown``: version 1 prices it as a system message of that content (⌈len/4⌉ + 8) and keeps
it until a header brings another; version 2 prices it as the harness's meter and ``contextBreakdown``
do (⌈len/4⌉ + 4), and a header without one counts none, the newest header winning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from projections.events import (
    APPEND,
    METERING_TYPES,
    Claim,
    Replace,
    check_claim,
    claim_of,
    surface_op,
    usage_of,
)
from projections.folds.projection import Projection
from projections.normalized import JSON, EventRecord
from projections.prices import event_price, header_system_price, header_system_tokens

KEY = "contextPressure"


@dataclass(frozen=True, slots=True)
class ContextPressure:
    """The newest provider total, the heuristic surface, and the total projected from both."""

    pressure: int | None
    surface: int
    projected: int | None
    context_window: int | None

    @property
    def fill(self) -> float | None:
        """Projected tokens as a share of the context window, when both are known."""
        if self.projected is None or not self.context_window:
            return None
        return self.projected / self.context_window

    def to_json(self) -> JSON:
        """The view as served."""
        return {
            "pressure": self.pressure,
            "surface": self.surface,
            "projected": self.projected,
            "contextWindow": self.context_window,
        }


class ContextPressureState(NamedTuple):
    """The surface total, the newest sample and the surface when it was taken, the claim, the window."""

    surface: int
    header_system: int
    pressure: int | None
    surface_at_sample: int
    claim: Claim | None
    context_window: int | None


class ContextPressureV1(Projection[ContextPressureState, ContextPressure]):
    """Pressure from the newest provider total, carried forward by the heuristic surface."""

    key = KEY
    state_version = 1

    def init(self) -> ContextPressureState:
        """No sample, an empty surface."""
        return ContextPressureState(0, 0, None, 0, None, None)

    def apply(self, state: ContextPressureState, event: EventRecord) -> ContextPressureState:
        """Move the surface total; take a sample from an ``assistant/message`` with usage."""
        if event.surface_op is None:
            return self._apply_off_surface(state, event)
        op = surface_op(event)
        price = event_price(event)
        surface = state.surface + price
        if op != APPEND:
            assert isinstance(op, Replace)
            if state.claim is not None:
                check_claim(event, state.claim, op)
                surface -= state.claim.tokens
            else:
                surface -= price
        state = state._replace(surface=surface, claim=None)
        if event.type == "assistant/message":
            report = usage_of(event)
            if report is not None:
                pressure = report.prompt_total + report.output
                state = state._replace(
                    pressure=pressure, surface_at_sample=state.surface + state.header_system
                )
        return state

    def _apply_off_surface(self, state: ContextPressureState, event: EventRecord) -> ContextPressureState:
        if event.type in METERING_TYPES:
            return state._replace(claim=claim_of(event))
        if event.type == "request/header":
            header_system = self._header_system(event)
            if header_system is not None:
                return state._replace(header_system=header_system, claim=None)
        elif event.type == "request/context":
            window = event.data.get("contextWindow")
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                return state._replace(context_window=window, claim=None)
        return state if state.claim is None else state._replace(claim=None)

    def _header_system(self, event: EventRecord) -> int | None:
        """The price of a ``request/header``'s system prompt; ``None`` keeps the one counted."""
        return header_system_price(event)

    def view(self, state: ContextPressureState) -> ContextPressure:
        """Pressure, surface and projected total, floored at zero."""
        surface = max(0, state.surface + state.header_system)
        projected = None
        if state.pressure is not None:
            projected = max(0, state.pressure + state.surface + state.header_system - state.surface_at_sample)
        return ContextPressure(state.pressure, surface, projected, state.context_window)

    def view_json(self, view: ContextPressure) -> JSON:
        """The view as served."""
        return view.to_json()

    def serialize(self, state: ContextPressureState) -> JSON:
        """Every field of the state."""
        return {
            "surface": state.surface,
            "headerSystem": state.header_system,
            "pressure": state.pressure,
            "surfaceAtSample": state.surface_at_sample,
            "claim": None if state.claim is None else state.claim.to_json(),
            "contextWindow": state.context_window,
        }

    def deserialize(self, value: JSON) -> ContextPressureState:
        """The state :meth:`serialize` wrote."""
        claim = None if value["claim"] is None else Claim.from_json(value["claim"])
        return ContextPressureState(
            value["surface"],
            value["headerSystem"],
            value["pressure"],
            value["surfaceAtSample"],
            claim,
            value["contextWindow"],
        )


class ContextPressureV2(ContextPressureV1):
    """Version 1's rules, with a header's system prompt priced as the harness's meter prices it."""

    state_version = 2

    def _header_system(self, event: EventRecord) -> int | None:
        """The meter's price of the newest header's system prompt; 0 for a header without one."""
        return header_system_tokens(event)
