"""The order of a dsh log's seqs: strictly increasing, with gaps kept and reported once per session.

What the harness itself accepts (toninfo/deepseek-harness @ 611615650f):

- its session invariant (``packages/core/session/src/invariant.ts``, ``validateEvent``) requires
  only that ``seq`` strictly increase: "seq must strictly increase: saw N after M";
- its writer numbers events ``seq = log.length`` (``packages/core/session/src/index.ts``), so a log
  it wrote and nobody edited has no gap; its JSONL loader
  (``packages/session/session-persistence-jsonl/src/format.ts``, ``SessionLogScanner``) refuses
  a gap before a later ``turn/end`` ("seq gap in committed region") and cuts the log at one after
  the last ``turn/end``, to resume appending where its own numbering left off.

Copies of real logs whose snapshot elides chunks have such gaps. Cachescope reads logs, it does not
append to them, so it follows the invariant rather than the loader: every event is kept in order, a
gap is no error, and one notice per session says how many numbers are missing. A seq that repeats
or goes back cannot take a place in the order: it is a line error naming the line, and the event is
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.normalized import EventRecord, LineError, LineNotice


@dataclass(frozen=True, slots=True)
class SeqGap:
    """Numbers missing from a log: ``first`` to ``last`` inclusive, before the event on ``line``."""

    first: int
    last: int
    line: int | None

    @property
    def missing(self) -> int:
        """How many numbers the gap leaves out."""
        return self.last - self.first + 1


class SeqOrder:
    """Admits a session's events in file order and remembers the gaps between their seqs."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.previous: int | None = None
        self.gaps: list[SeqGap] = []

    def admit(self, event: EventRecord) -> LineError | None:
        """``None`` when ``event`` takes its place after the events admitted before it; else the
        line error that drops it (its seq repeats or goes back)."""
        if self.previous is not None and event.seq <= self.previous:
            how = "repeats" if event.seq == self.previous else "goes back after"
            reason = f"seq {event.seq} {how} seq {self.previous}; seqs must strictly increase; dropped"
            return LineError(self.path, event.line, "seq", reason)
        expected = 0 if self.previous is None else self.previous + 1
        if event.seq > expected:
            self.gaps.append(SeqGap(expected, event.seq - 1, event.line))
        self.previous = event.seq
        return None

    def gaps_notice(self) -> LineNotice | None:
        """The one notice for the whole session: how many numbers are missing, where the first gap
        is; ``None`` when the seqs ran without a gap."""
        if not self.gaps:
            return None
        missing = sum(gap.missing for gap in self.gaps)
        first = self.gaps[0]
        span = str(first.first) if first.missing == 1 else f"{first.first} to {first.last}"
        numbers = "number is" if missing == 1 else "numbers are"
        gaps = "gap" if len(self.gaps) == 1 else "gaps"
        reason = (
            f"{missing} seq {numbers} missing in {len(self.gaps)} {gaps} (the first: seq {span}); "
            "the events present are kept in order and folded as they are"
        )
        return LineNotice(self.path, first.line, "seq", reason)
