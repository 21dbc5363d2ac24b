"""The event vocabulary the folds read, and typed readers for the fields they interpret (DESIGN §4).

Every reader raises :class:`FoldError` naming the seq, the event type and the rule that failed, so a
bad log stops its fold with a message an operator can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

from projections.normalized import JSON, EventRecord

SURFACE_TYPES: Final = frozenset({"system/message", "user/message", "assistant/message", "tool/result"})
"""Event types that may carry ``surfaceOp``: each is one message of what the model sees."""

HARNESS_EVENT_TYPES: Final = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)
"""The harness's own event catalogue (``KNOWN_SESSION_EVENT_TYPES`` of its session package).

The harness refuses a log holding any other type unless the event is marked ``ignorable``; so does
Cachescope. Every type here that is not a surface or metering event folds as a no-op.
"""

OLDER_SPELLINGS: Final = {
    "compact/start": "compaction/start",
    "compact/summary": "compaction/summary",
    "compact/prune": "compaction/prune",
    "compact/end": "compaction/end",
}
"""Types older harness builds wrote, by the type they are now spelled as: the event is the same."""

CACHESCOPE_PREFIX: Final = "cache/"
"""Cachescope's own namespace (``cache/request``, ``cache/render-record``, …): known in any log."""

KNOWN_EVENT_TYPES: Final = SURFACE_TYPES | HARNESS_EVENT_TYPES | frozenset(OLDER_SPELLINGS)
"""Types a fold understands besides the ``cache/`` namespace; any other must be marked ``ignorable``."""

METERING_TYPES: Final = frozenset({"compaction/summary", "compaction/prune"})
"""Event types that state the price of the range the next event replaces."""


def is_known_event_type(event_type: str) -> bool:
    """Whether ``event_type`` may appear without ``ignorable``: the harness's catalogue, an older
    spelling of one of its types, a ``system/message``, or Cachescope's own ``cache/`` namespace."""
    return event_type in KNOWN_EVENT_TYPES or event_type.startswith(CACHESCOPE_PREFIX)


def current_spelling(event: EventRecord) -> EventRecord:
    """``event`` under the type the harness spells it with today (``compact/summary`` is
    ``compaction/summary``), so a fold reads one vocabulary; other events are returned as they are."""
    spelled = OLDER_SPELLINGS.get(event.type)
    return event if spelled is None else replace(event, type=spelled)


class FoldError(Exception):
    """A fold stopped at one event: names the session (when known), seq, event type and the rule."""

    def __init__(
        self, seq: int, event_type: str, rule: str, message: str, session: str | None = None
    ) -> None:
        self.session = session
        self.seq = seq
        self.event_type = event_type
        self.rule = rule
        self.detail = message
        where = f"session {session}, " if session is not None else ""
        super().__init__(f"{where}seq {seq} ({event_type}): {rule}: {message}")

    def with_session(self, session: str) -> FoldError:
        """The same error with the session id in its message, for callers that fold many sessions."""
        return FoldError(self.seq, self.event_type, self.rule, self.detail, session=session)


def fold_error(event: EventRecord, rule: str, message: str) -> FoldError:
    """A :class:`FoldError` at ``event``."""
    return FoldError(event.seq, event.type, rule, message)


@dataclass(frozen=True, slots=True)
class Replace:
    """A replacement of an inclusive run of current surface nodes by the event's node.

    ``by_seq`` tells the spelling: positions in the current node list (``start``/``end``) or the
    seqs of the run's first and last node (``startSeq``/``endSeq``).
    """

    start: int
    end: int
    by_seq: bool


APPEND: Final = "append"

SurfaceOp = Replace | str | None
"""``"append"``, a :class:`Replace`, or ``None`` for an event that is not on the surface."""


def surface_op(event: EventRecord) -> SurfaceOp:
    """The event's surface operation, checked: only surface types may carry one."""
    op = event.surface_op
    if op is None:
        return None
    if event.type not in SURFACE_TYPES:
        raise fold_error(
            event, "surface-op-on-non-surface-event", f"type {event.type!r} cannot be on the surface"
        )
    if op == APPEND:
        return APPEND
    if isinstance(op, Mapping) and op.get("op") == "replace":
        if "startSeq" in op or "endSeq" in op:
            return Replace(_int_field(event, op, "startSeq"), _int_field(event, op, "endSeq"), by_seq=True)
        return Replace(_int_field(event, op, "start"), _int_field(event, op, "end"), by_seq=False)
    raise fold_error(event, "bad-surface-op", f"surfaceOp {op!r} is neither 'append' nor a replace")


@dataclass(frozen=True, slots=True)
class Claim:
    """What a metering event states about the range the next event replaces (DESIGN §4.1)."""

    start: int
    end: int
    tokens: int
    shadowed: tuple[int, ...]

    def to_json(self) -> JSON:
        """The claim as stored in a projection row."""
        return {"start": self.start, "end": self.end, "tokens": self.tokens, "shadowed": list(self.shadowed)}

    @classmethod
    def from_json(cls, value: JSON) -> Claim:
        """A claim read back from :meth:`to_json`."""
        return cls(value["start"], value["end"], value["tokens"], tuple(value["shadowed"]))


def claim_of(event: EventRecord) -> Claim:
    """The claim a ``compaction/summary`` or ``compaction/prune`` event arms."""
    data = event.data
    shadowed_range = data.get("shadowedRange")
    if not isinstance(shadowed_range, Mapping):
        raise fold_error(event, "bad-claim", "field 'data.shadowedRange' must be an object {start, end}")
    shadowed = data.get("shadowedSeqs", [])
    if not isinstance(shadowed, list) or not all(_is_int(seq) for seq in shadowed):
        raise fold_error(event, "bad-claim", "field 'data.shadowedSeqs' must be a list of seqs")
    tokens = data.get("shadowedTokenCount")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise fold_error(event, "bad-claim", "field 'data.shadowedTokenCount' must be an integer")
    return Claim(
        start=_int_field(event, shadowed_range, "start", "data.shadowedRange."),
        end=_int_field(event, shadowed_range, "end", "data.shadowedRange."),
        tokens=tokens,
        shadowed=tuple(shadowed),
    )


def claim_matches(claim: Claim, op: Replace) -> bool:
    """Whether a replacement names the claimed range.

    Positions are compared with ``shadowedRange`` as written. A seq-spelled replacement also matches
    the first and last of ``shadowedSeqs``, because a producer may write ``shadowedRange`` in
    positions while spelling the replacement in seqs. The comparison needs no node positions, so
    a compact state can make it.
    """
    if (op.start, op.end) == (claim.start, claim.end):
        return True
    return (
        op.by_seq and bool(claim.shadowed) and (op.start, op.end) == (claim.shadowed[0], claim.shadowed[-1])
    )


def check_claim(event: EventRecord, claim: Claim, op: Replace) -> None:
    """Refuse a replacement that follows a metering event but names another range."""
    if not claim_matches(claim, op):
        spelling = "startSeq/endSeq" if op.by_seq else "start/end"
        raise fold_error(
            event,
            "claim-range-mismatch",
            f"replaces {spelling} {op.start}..{op.end} but the metering event claimed "
            f"{claim.start}..{claim.end} (shadowedSeqs {list(claim.shadowed)})",
        )


def replaced_seqs(event: EventRecord, op: Replace) -> tuple[int, ...] | None:
    """The seqs a replacement shadows when the event itself says so, without the surface.

    A one-node seq spelling names its node; otherwise ``sourceEventSeqs`` lists the shadowed nodes.
    ``None`` when only the node list could tell.
    """
    if op.by_seq and op.start == op.end:
        return (op.start,)
    return event.source_event_seqs


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_field(event: EventRecord, obj: Mapping[str, JSON], name: str, prefix: str = "surfaceOp.") -> int:
    value = obj.get(name)
    if not _is_int(value):
        raise fold_error(event, "bad-field", f"field {prefix}{name} must be an integer, got {value!r}")
    assert isinstance(value, int)
    return value


class UsageReport(NamedTuple):
    """A provider's usage for one call, in disjoint buckets (an absent bucket reads as 0)."""

    uncached_input: int
    cache_read: int
    cache_write: int
    """Every cache write, including the 1-hour share below."""
    cache_write_1h: int
    output: int
    cache_reported: bool
    """Whether the provider reported cache buckets at all: a hit rate over none is unknown, not 0."""

    @property
    def prompt_total(self) -> int:
        """Every prompt token the provider processed: uncached + read + writes."""
        return self.uncached_input + self.cache_read + self.cache_write


_USAGE_FIELDS: Final = (
    "inputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "cacheWrite1hTokens",
    "outputTokens",
)


def usage_of(event: EventRecord) -> UsageReport | None:
    """The ``usage`` an ``assistant/message`` or ``compaction/summary`` carries, or ``None``."""
    usage = event.data.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        raise fold_error(event, "bad-usage", f"field 'data.usage' must be an object, got {usage!r}")
    values: list[int] = []
    for name in _USAGE_FIELDS:
        value = usage.get(name, 0)
        if value is None:
            value = 0
        if not _is_int(value) or value < 0:
            raise fold_error(event, "bad-usage", f"field 'data.usage.{name}' must be a count, got {value!r}")
        values.append(value)
    uncached, read, write, write_1h, output = values
    cache_reported = "cacheReadTokens" in usage or "cacheWriteTokens" in usage
    return UsageReport(uncached, read, write, write_1h, output, cache_reported)


def report_key(event: EventRecord) -> str:
    """What a usage report is about: a second report with the same key replaces the first.

    An ``assistant/message`` reports its turn and step; a ``compaction/summary`` its compaction.
    """
    data = event.data
    if event.type == "compaction/summary":
        return f"compaction:{data.get('compactionId')}"
    return f"step:{data.get('turn')}:{data.get('step')}"
