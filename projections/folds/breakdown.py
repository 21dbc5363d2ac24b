"""``contextBreakdown``: what the next request's context is made of — system prompt, tool schemas and
messages, in heuristic tokens (DESIGN §5.1).

Versions 5 and 6 look at the surface only: ``systemTokens`` is the last retained system prompt with
a positive price, ``messageTokens`` the rest of the surface, and ``toolsTokens`` is always 0. Versions
7 and 8 add the request envelope the harness's own meter adds: ``toolsTokens`` is the price of the
newest ``request/header``'s tool schemas, and when the surface holds no system prompt — a header-era
log (version 0), whose system prompt travels in ``request/header`` — ``systemTokens`` is the price of
the newest header's system prompt, and every surface node counts as a message. Version 7 keeps
version 5's surface rules and version 8 keeps version 6's, exactly; each also keeps the envelope's two
prices in its state. On a log the harness wrote, version 8 shows after every event the three figures
the harness's ``contextBreakdown`` shows.

Within each pair the two versions give the same view for every log whose producer meters its
replacements exactly:

- **version 5** keeps one entry per retained surface node and is exact for every replacement; its
  state grows with the number of messages.
- **version 6** keeps the retained system prompts, one running total and at most one claim; its
  state grows with the number of surviving system prompts. An unmetered replacement of messages
  folds at zero delta, so version 6 is off by that replacement's price difference.

States are immutable values (named tuples, and an :class:`AppendVector` for version 5's entries),
so a state kept in a row cannot be changed by a later ``apply``. Plain appends build one small tuple
and share everything else, which keeps a fold allocation-light.
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
from projections.prices import event_price, header_system_tokens, header_tools_tokens

KEY = "contextBreakdown"
SYSTEM_TYPE = "system/message"
HEADER_TYPE = "request/header"


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The view after an event: tokens of the system prompt, of the messages and of the tool schemas."""

    system_tokens: int
    message_tokens: int
    tools_tokens: int = 0

    def to_json(self) -> JSON:
        """The view as served: ``{systemTokens, toolsTokens, messageTokens}``."""
        return {
            "systemTokens": self.system_tokens,
            "toolsTokens": self.tools_tokens,
            "messageTokens": self.message_tokens,
        }


class Envelope(NamedTuple):
    """The prices of the newest ``request/header``'s system prompt and tool schemas (0 before one)."""

    system: int
    tools: int


NO_ENVELOPE = Envelope(0, 0)


def envelope_after(envelope: Envelope, event: EventRecord) -> Envelope:
    """The envelope after ``event``: a ``request/header`` replaces both prices, last wins."""
    if event.type != HEADER_TYPE:
        return envelope
    return Envelope(header_system_tokens(event), header_tools_tokens(event))


def _breakdown(surface_total: int, surface_system: int, envelope: Envelope) -> Breakdown:
    """The view from the surface total, its system prompt's price and the envelope.

    A surface system prompt is the system prompt; without one, the newest header's is, and every
    surface node is a message. (A surface-only version passes :data:`NO_ENVELOPE`.)
    """
    if surface_system > 0:
        return Breakdown(surface_system, max(0, surface_total - surface_system), envelope.tools)
    return Breakdown(envelope.system, max(0, surface_total), envelope.tools)


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
    envelope: Envelope = NO_ENVELOPE
    """The request envelope's prices; kept by version 7 only."""


def _last_system_price(entries: AppendVector[Entry]) -> int:
    for position in range(len(entries) - 1, -1, -1):
        entry = entries[position]
        if entry.system and entry.tokens > 0:
            return entry.tokens
    return 0


class ContextBreakdownV5(Projection[BreakdownV5State, Breakdown]):
    """Positional ``contextBreakdown`` of the surface: exact for every replacement."""

    key = KEY
    state_version = 5
    with_envelope = False

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
            return BreakdownV5State(entries, state.total + price, system, None, state.envelope)
        assert isinstance(op, Replace)
        if state.claim is not None:
            check_claim(event, state.claim, op)
        start, end = resolve_range([entry.seq for entry in state.entries], op, event)
        removed = sum(entry.tokens for entry in state.entries[start : end + 1])
        entries = state.entries.splice(start, end, (Entry(event.seq, price, is_system),))
        total = state.total - removed + price
        return BreakdownV5State(entries, total, _last_system_price(entries), None, state.envelope)

    def _apply_off_surface(self, state: BreakdownV5State, event: EventRecord) -> BreakdownV5State:
        if event.type in METERING_TYPES:
            return state._replace(claim=claim_of(event))
        if self.with_envelope and event.type == HEADER_TYPE:
            return state._replace(envelope=envelope_after(state.envelope, event), claim=None)
        return state if state.claim is None else state._replace(claim=None)

    def view(self, state: BreakdownV5State) -> Breakdown:
        """System prompt, messages and tool schemas, floored at zero."""
        return _breakdown(state.total, state.system, state.envelope)

    def view_json(self, view: Breakdown) -> JSON:
        """``{systemTokens, toolsTokens, messageTokens}`` (``toolsTokens`` is 0 under version 5)."""
        return view.to_json()

    def serialize(self, state: BreakdownV5State) -> JSON:
        """Entries as ``[seq, tokens, 0|1]``; the total and system price are derived again on reading."""
        value: dict[str, JSON] = {
            "entries": [[entry.seq, entry.tokens, int(entry.system)] for entry in state.entries],
            "claim": None if state.claim is None else state.claim.to_json(),
        }
        if self.with_envelope:
            value["envelope"] = list(state.envelope)
        return value

    def deserialize(self, value: JSON) -> BreakdownV5State:
        """The state :meth:`serialize` wrote."""
        entries = AppendVector(Entry(seq, tokens, bool(system)) for seq, tokens, system in value["entries"])
        claim = None if value["claim"] is None else Claim.from_json(value["claim"])
        total = sum(entry.tokens for entry in entries)
        envelope = Envelope(*value["envelope"]) if self.with_envelope else NO_ENVELOPE
        return BreakdownV5State(entries, total, _last_system_price(entries), claim, envelope)


class ContextBreakdownV7(ContextBreakdownV5):
    """Positional ``contextBreakdown`` with the request envelope: version 5's surface rules, plus the
    newest ``request/header``'s tool schemas and, in a header-era log, its system prompt."""

    state_version = 7
    with_envelope = True


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
    envelope: Envelope = NO_ENVELOPE
    """The request envelope's prices; kept by version 8 only."""


class ContextBreakdownV6(Projection[BreakdownV6State, Breakdown]):
    """Compact ``contextBreakdown`` of the surface: state follows the surviving system prompts."""

    key = KEY
    state_version = 6
    with_envelope = False

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
            return BreakdownV6State(state.total + price, systems, None, state.envelope)
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
        return BreakdownV6State(state.total - claim.tokens + price, systems, None, state.envelope)

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
                return BreakdownV6State(total, systems, None, state.envelope)
        if event.type == SYSTEM_TYPE:
            raise fold_error(
                event,
                "unmetered-system-insert",
                "an unmetered replacement of anything but one retained system prompt cannot insert a "
                "system/message: the compact state cannot order it among the retained prompts",
            )
        # Without a meter the shadowed price is unknown: fold at zero delta, as contextPressure does.
        return BreakdownV6State(state.total, state.systems, None, state.envelope)

    def _apply_off_surface(self, state: BreakdownV6State, event: EventRecord) -> BreakdownV6State:
        if event.type in METERING_TYPES:
            return state._replace(claim=claim_of(event))
        if self.with_envelope and event.type == HEADER_TYPE:
            return state._replace(envelope=envelope_after(state.envelope, event), claim=None)
        return state if state.claim is None else state._replace(claim=None)

    def view(self, state: BreakdownV6State) -> Breakdown:
        """System prompt, messages and tool schemas, floored at zero."""
        system = 0
        for prompt in reversed(state.systems):
            if prompt.tokens > 0:
                system = prompt.tokens
                break
        return _breakdown(state.total, system, state.envelope)

    def view_json(self, view: Breakdown) -> JSON:
        """``{systemTokens, toolsTokens, messageTokens}`` (``toolsTokens`` is 0 under version 6)."""
        return view.to_json()

    def serialize(self, state: BreakdownV6State) -> JSON:
        """The total, the prompts as ``[seq, tokens]``, the claim (and version 8's envelope)."""
        value: dict[str, JSON] = {
            "total": state.total,
            "systems": [[prompt.seq, prompt.tokens] for prompt in state.systems],
            "claim": None if state.claim is None else state.claim.to_json(),
        }
        if self.with_envelope:
            value["envelope"] = list(state.envelope)
        return value

    def deserialize(self, value: JSON) -> BreakdownV6State:
        """The state :meth:`serialize` wrote."""
        systems = tuple(SystemPrompt(seq, tokens) for seq, tokens in value["systems"])
        claim = None if value["claim"] is None else Claim.from_json(value["claim"])
        envelope = Envelope(*value["envelope"]) if self.with_envelope else NO_ENVELOPE
        return BreakdownV6State(value["total"], systems, claim, envelope)


class ContextBreakdownV8(ContextBreakdownV6):
    """Compact ``contextBreakdown`` with the request envelope: version 6's surface rules, plus the
    newest ``request/header``'s tool schemas and, in a header-era log, its system prompt. The live
    version: the harness's own meter folds the surface this way."""

    state_version = 8
    with_envelope = True
