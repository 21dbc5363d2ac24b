"""A Codex rollout's reading state between two lines, as JSON, so a grown rollout is read from where
the last read stopped (see :mod:`projections.formats.reading.resume`).

What a rollout carries from line to line: the numbering of events, calls, turns and steps; the
price of each message on the surface (a compaction states what it replaces); the names of the
tools called; the model output of a call not yet closed by its ``token_count``, and the tool
results held behind it; the last cumulative token count (a repeat is no new call); whether a
compaction or a fork's copied history is being read, and the time of the last line (the silence
that ends a copied history).
"""

from __future__ import annotations

from projections.formats.openai.codex_rollout import OpenCall, RolloutReader
from projections.formats.reading.resume import time_from_json, time_to_json
from projections.normalized import JSON

STATE_VERSION = 1
"""Bumped when the state's shape changes; a state of another version is not resumed from."""


def rollout_state(rollout: RolloutReader) -> dict[str, JSON]:
    """What ``rollout`` must carry to the next line, as JSON."""
    pending = rollout.pending
    return {
        "version": STATE_VERSION,
        "seq": rollout.seq,
        "ordinal": rollout.ordinal,
        "turn": rollout.turn,
        "step": rollout.step,
        "model": rollout.model,
        "surface": [[seq, price] for seq, price in rollout.surface.items()],
        "tool_names": dict(rollout.tool_names),
        "pending": (
            [pending.first_line, time_to_json(pending.started_at), time_to_json(pending.time), pending.blocks]
            if pending is not None
            else None
        ),
        "held": [[value, number, time_to_json(time)] for value, number, time in rollout.held],
        "previous_total": dict(rollout.tokens.previous_total) if rollout.tokens.previous_total else None,
        "just_compacted": rollout.just_compacted,
        "inherited": rollout.inherited,
        "last_time": time_to_json(rollout.last_time),
        "ended_at": time_to_json(rollout.session.ended_at),
    }


def rollout_restore(rollout: RolloutReader, state: dict[str, JSON]) -> None:
    """Put ``rollout`` back in the ``state`` :func:`rollout_state` took."""
    rollout.seq = state["seq"]
    rollout.ordinal = state["ordinal"]
    rollout.turn = state["turn"]
    rollout.step = state["step"]
    rollout.model = state["model"]
    rollout.surface = {seq: price for seq, price in state["surface"]}
    rollout.tool_names = dict(state["tool_names"])
    pending = state["pending"]
    rollout.pending = (
        OpenCall(pending[0], time_from_json(pending[1]), time_from_json(pending[2]), list(pending[3]))
        if pending is not None
        else None
    )
    rollout.held = [(value, number, time_from_json(time)) for value, number, time in state["held"]]
    rollout.tokens.previous_total = state["previous_total"]
    rollout.just_compacted = state["just_compacted"]
    rollout.inherited = state["inherited"]
    rollout.last_time = time_from_json(state["last_time"])
    rollout.session.ended_at = time_from_json(state["ended_at"])
