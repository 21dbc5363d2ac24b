"""``contextBreakdown``: how much of the surface is system prompt and how much is messages (DESIGN §5.1).

Two state versions give the same view for every log whose producer meters its replacements exactly:

- **version 5** keeps one entry per retained surface node and is exact for every replacement; its
  state grows with the number of messages.
- **version 6** keeps the retained system prompts, one running total and at most one claim; its
  state grows with the number of surviving system prompts. An unmetered replacement of messages
  folds at zero delta, so version 6 is off by that replacement's price difference.

States are immutable values (named tuples, and an :class:`AppendVector` for version 5's entries),
so a state kept in a row cannot be changed by a later ``apply``. Plain appends build one small tuple
and share everything else, which keeps a fold allocation-light.

Version 0 logs have no ``system/message`` events: their system prompt travels in the
``request/header`` event, which is not a surface node. The view counts the surface only, as the
harness does, so a version 0 log shows 0 system tokens (``contextPressure`` still counts the header
prompt, to compare its surface with the provider's total).
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
    fold_error,
    replaced_seqs,
    surface_op,
)
from projections.folds.append_vector import AppendVector
from projections.folds.projection import Projection
from projections.folds.surface import resolve_range
from projections.normalized import JSON, EventRecord
from projections.prices import event_price

KEY = "contextBreakdown"
SYSTEM_TYPE = "system/message"


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The view after an event: tokens of the system prompt and of everything else on the surface."""

    system_tokens: int
    message_tokens: int

    def to_json(self) -> JSON:
        """The view as stored and served: ``{systemTokens, messageTokens}``."""
        return {"systemTokens": self.system_tokens, "messageTokens": self.message_tokens}


def _breakdown(surface_total: int, system: int) -> Breakdown:
    return Breakdown(max(0, system), max(0, surface_total - system))


# --- version 5 --------------------------------------------------------------------------------------


class Entry(NamedTuple):
    """One retained surface node of version 5."""

    seq: int
    tokens: int
    system: bool


class BreakdownV5State(NamedTuple):
    """Version 5: one entry per retained node, the claim, and the derived total and system price."""

    entries: AppendVector[Entry]
    total: int
    system: int
    """Price of the last retained system prompt with a positive price; 0 when there is none."""
    claim: Claim | None


def _last_system_price(entries: AppendVector[Entry]) -> int:
    for position in range(len(entries) - 1, -1, -1):
        entry = entries[position]
        if entry.system and entry.tokens > 0:
            return entry.tokens
    return 0


class ContextBreakdownV5(Projection[BreakdownV5State, Breakdown]):
    """Positional ``contextBreakdown``: exact for every replacement."""

    key = KEY
    state_version = 5

    def init(self) -> BreakdownV5State:
        """An empty surface."""
        return BreakdownV5State(AppendVector(), 0, 0, None)

    def apply(self, state: BreakdownV5State, event: EventRecord) -> BreakdownV5State:
        """Append or replace entries; arm, consume or expire the claim."""
        if event.surface_op is None:
            return self._apply_off_surface(state, event)
        op = surface_op(event)
        price = event_price(event)
        is_system = event.type == SYSTEM_TYPE
        if op == APPEND:
            system = price if is_system and price > 0 else state.system
            entries = state.entries.append(Entry(event.seq, price, is_system))
            return BreakdownV5State(entries, state.total + price, system, None)
        assert isinstance(op, Replace)
        if state.claim is not None:
            check_claim(event, state.claim, op)
        start, end = resolve_range([entry.seq for entry in state.entries], op, event)
        removed = sum(entry.tokens for entry in state.entries[start : end + 1])
        entries = state.entries.splice(start, end, (Entry(event.seq, price, is_system),))
        total = state.total - removed + price
        return BreakdownV5State(entries, total, _last_system_price(entries), None)

    def _apply_off_surface(self, state: BreakdownV5State, event: EventRecord) -> BreakdownV5State:
        if event.type in METERING_TYPES:
            return state._replace(claim=claim_of(event))
        return state if state.claim is None else state._replace(claim=None)

    def view(self, state: BreakdownV5State) -> Breakdown:
        """``{systemTokens, messageTokens}``, floored at zero."""
        return _breakdown(state.total, state.system)

    def view_json(self, view: Breakdown) -> JSON:
        """``{systemTokens, messageTokens}``."""
        return view.to_json()

    def serialize(self, state: BreakdownV5State) -> JSON:
        """Entries as ``[seq, tokens, 0|1]``; the total and system price are derived again on reading."""
        return {
            "entries": [[entry.seq, entry.tokens, int(entry.system)] for entry in state.entries],
            "claim": None if state.claim is None else state.claim.to_json(),
        }

    def deserialize(self, value: JSON) -> BreakdownV5State:
        """The state :meth:`serialize` wrote."""
        entries = AppendVector(Entry(seq, tokens, bool(system)) for seq, tokens, system in value["entries"])
        claim = None if value["claim"] is None else Claim.from_json(value["claim"])
        total = sum(entry.tokens for entry in entries)
        return BreakdownV5State(entries, total, _last_system_price(entries), claim)


# --- version 6 --------------------------------------------------------------------------------------


class SystemPrompt(NamedTuple):
    """A retained ``system/message`` node of version 6."""

    seq: int
    tokens: int


class BreakdownV6State(NamedTuple):
    """Version 6: retained system prompts in surface order, the running surface total, the claim."""

    total: int
    systems: tuple[SystemPrompt, ...]
    claim: Claim | None


class ContextBreakdownV6(Projection[BreakdownV6State, Breakdown]):
    """Compact ``contextBreakdown``: state follows the surviving system prompts, not the messages."""

    key = KEY
    state_version = 6

    def init(self) -> BreakdownV6State:
        """An empty surface."""
        return BreakdownV6State(0, (), None)

    def apply(self, state: BreakdownV6State, event: EventRecord) -> BreakdownV6State:
        """Add, meter or rewrite prices; arm, consume or expire the claim."""
        if event.surface_op is None:
            return self._apply_off_surface(state, event)
        op = surface_op(event)
        price = event_price(event)
        if op == APPEND:
            systems = state.systems
            if event.type == SYSTEM_TYPE:
                systems = (*systems, SystemPrompt(event.seq, price))
            return BreakdownV6State(state.total + price, systems, None)
        assert isinstance(op, Replace)
        if state.claim is not None:
            return self._metered(state, event, op, state.claim, price)
        return self._unmetered(state, event, op, price)

    def _metered(
        self, state: BreakdownV6State, event: EventRecord, op: Replace, claim: Claim, price: int
    ) -> BreakdownV6State:
        check_claim(event, claim, op)
        if event.type == SYSTEM_TYPE:
            raise fold_error(
                event,
                "system-prompt-over-metered-range",
                "a system/message cannot take the place of a metered range",
            )
        shadowed = frozenset(claim.shadowed)
        systems = tuple(prompt for prompt in state.systems if prompt.seq not in shadowed)
        return BreakdownV6State(state.total - claim.tokens + price, systems, None)

    def _unmetered(
        self, state: BreakdownV6State, event: EventRecord, op: Replace, price: int
    ) -> BreakdownV6State:
        replaced = replaced_seqs(event, op)
        if replaced is not None and len(replaced) == 1:
            for position, prompt in enumerate(state.systems):
                if prompt.seq != replaced[0]:
                    continue
                # A system prompt rewritten in place keeps its place among the prompts.
                kept = (SystemPrompt(event.seq, price),) if event.type == SYSTEM_TYPE else ()
                systems = (*state.systems[:position], *kept, *state.systems[position + 1 :])
                total = state.total - prompt.tokens + price
                return BreakdownV6State(total, systems, None)
        if event.type == SYSTEM_TYPE:
            raise fold_error(
                event,
                "unmetered-system-insert",
                "an unmetered replacement of anything but one retained system prompt cannot insert a "
                "system/message: the compact state cannot order it among the retained prompts",
            )
        # Without a meter the shadowed price is unknown: fold at zero delta, as contextPressure does.
        return BreakdownV6State(state.total, state.systems, None)

    def _apply_off_surface(self, state: BreakdownV6State, event: EventRecord) -> BreakdownV6State:
        if event.type in METERING_TYPES:
            return state._replace(claim=claim_of(event))
        return state if state.claim is None else state._replace(claim=None)

    def view(self, state: BreakdownV6State) -> Breakdown:
        """``{systemTokens, messageTokens}``, floored at zero."""
        system = 0
        for prompt in reversed(state.systems):
            if prompt.tokens > 0:
                system = prompt.tokens
                break
        return _breakdown(state.total, system)

    def view_json(self, view: Breakdown) -> JSON:
        """``{systemTokens, messageTokens}``."""
        return view.to_json()

    def serialize(self, state: BreakdownV6State) -> JSON:
        """The total, the prompts as ``[seq, tokens]`` and the claim."""
        return {
            "total": state.total,
            "systems": [[prompt.seq, prompt.tokens] for prompt in state.systems],
            "claim": None if state.claim is None else state.claim.to_json(),
        }

    def deserialize(self, value: JSON) -> BreakdownV6State:
        """The state :meth:`serialize` wrote."""
        systems = tuple(SystemPrompt(seq, tokens) for seq, tokens in value["systems"])
        claim = None if value["claim"] is None else Claim.from_json(value["claim"])
        return BreakdownV6State(value["total"], systems, claim)
