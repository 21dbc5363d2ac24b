"""What may have caused a miss that a usage-only log cannot explain, ranked by the evidence.

A transcript logs what each call read and wrote, never the bytes it sent. When a call reads less
than the previous call of its lineage left cached, inside the TTL and with no compaction, model
switch or head rewrite between, the log cannot tell a client-side change of the bytes from an
eviction on the provider's side. Instead of claiming either, the analysis lists the causes the
figures are consistent with, the best-supported first:

1. ``fell-to-level``: the read equals exactly a level an earlier call of the session read or left
   cached (the system + tools level when that level is the lineage's static prefix). The entries up
   to there were read back and nothing after them matched: what a client-side change right after
   that point gives. An eviction of only the later entries would give it too, so it is the first
   candidate, not a verdict.
2. ``client-updated``: the client's version changed since the previous call; a new release sends
   its own system prompt and tool definitions.
3. ``ttl-gap``: the gap since the previous call is close to the TTL, so the entry may have expired
   on the provider's clock before the call arrived.
4. ``bytes-changed``: something in the prompt the transcript does not show changed (the system
   prompt, a tool definition, an edited or cleared message, a client update).
5. ``provider-side``: the prefix was identical and the provider evicted or routed it elsewhere.

The last two are always listed: without the bytes neither can be excluded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.normalized import JSON

TTL_GAP_SHARE = 0.8
"""A gap longer than this share of the TTL makes expiry a candidate (clocks and queueing differ)."""

SETTLE_WITH = (
    "capture the requests (claude-trace, or `manage.py record`) to see which block changed, or turn "
    "on the provider's cache diagnostics to see whether an identical prefix was evicted"
)
"""What data would settle a miss a usage-only log cannot explain."""


@dataclass(frozen=True, slots=True)
class Level:
    """A prompt size the cache held after an earlier call: what it read, or what it read and wrote."""

    tokens: int
    ordinal: int
    what: str
    """``read`` or ``read + write``."""
    static: bool
    """Whether the level is the lineage's static prefix (system + tools): the read of its first call
    or of the first call after a compaction or a head rewrite."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One possible cause of a miss and the evidence for it."""

    cause: str
    evidence: str

    def to_json(self) -> dict[str, JSON]:
        """The candidate as plain JSON."""
        return {"cause": self.cause, "evidence": self.evidence}


def miss_candidates(
    reported_read: int,
    levels: Sequence[Level],
    gap_seconds: float | None,
    ttl_seconds: float,
    versions: tuple[str, str] = ("", ""),
) -> list[Candidate]:
    """The causes a usage-only miss is consistent with, the best-supported first.

    ``levels`` are the earlier levels of the session, oldest first; ``gap_seconds`` the time since
    the previous call of the lineage (``None`` when a start time is missing); ``versions`` the
    client versions of the previous call and this one (empty where the source does not say).
    """
    out: list[Candidate] = []
    matches = [level for level in levels if level.tokens == reported_read and reported_read > 0]
    if matches:
        level = matches[-1]
        where = "the system + tools prefix" if level.static else "an earlier prompt"
        out.append(
            Candidate(
                "fell-to-level",
                f"the read, {reported_read} tokens, equals exactly what call #{level.ordinal} "
                f"{'read' if level.what == 'read' else 'left cached'} ({where}): read back up to there "
                "and nothing after, as a client-side change right after it gives",
            )
        )
    before, now = versions
    if before and now and before != now:
        out.append(
            Candidate("client-updated", f"the client changed from {before} to {now} since the previous call")
        )
    if gap_seconds is not None and gap_seconds > TTL_GAP_SHARE * ttl_seconds:
        out.append(
            Candidate(
                "ttl-gap",
                f"{gap_seconds:.0f} s passed since the previous call, close to the {ttl_seconds:.0f} s TTL",
            )
        )
    out.append(
        Candidate(
            "bytes-changed",
            "a change the transcript does not show (system prompt, tool definitions, an edited or "
            "cleared message, a client update)",
        )
    )
    out.append(Candidate("provider-side", "an identical prefix evicted or routed elsewhere by the provider"))
    return out


def candidates_detail(reported_read: int, carried: int, candidates: Sequence[Candidate]) -> str:
    """What a usage-only miss's verdict says: the figures, that the cause cannot be shown, and the
    candidates in rank order."""
    ranked = "; ".join(f"({i}) {c.cause}: {c.evidence}" for i, c in enumerate(candidates, 1))
    return (
        f"read {reported_read} of the {carried} tokens the previous call left cached, inside the TTL; "
        f"a transcript does not show the bytes sent, so the cause cannot be shown. Candidates, most "
        f"likely first: {ranked}"
    )
