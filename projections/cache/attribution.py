"""Claude Code's attribution block: a system block whose value changes per session and per request.

Since 2.1.36 Claude Code sends, as the first ``system`` block of every Messages request, a line
of the shape ``x-anthropic-billing-header: cc_version=2.1.88.a3f; cc_entrypoint=cli; cch=36ee5;``
(later releases add ``cc_prev_req=req_…``). The sources this module follows:

- anthropics/claude-code#68900 (2.1.177): the block is ``system[0]``, ``cch`` changes on every
  request, and on Anthropic-compatible endpoints that cache by prefix it zeroes the hit rate;
- motiful/cc-cache-audit (2.1.88, first-party API, ``claude --print``): the 3-hex suffix of
  ``cc_version`` is hashed from the session's first user message, so each session (and each
  subagent) sends another block; a new session read only the ~11k tokens of tools and wrote the
  ~12k of the system prompt again, and read both once ``CLAUDE_CODE_ATTRIBUTION_HEADER`` was off;
- sgl-project/sglang#21064, ollama/ollama#14918, MadAppGang/claudish#167, teamchong/pxpipe#180:
  local servers and gateways strip the block (or the line, wherever it sits) to keep their prefix
  cache; anthropics/claude-code#50085 asks for ``CLAUDE_CODE_ATTRIBUTION_HEADER`` to be documented;
- Claude Code's gateway protocol page (quoted in musistudio/claude-code-router#1791): from
  2.1.181 the block is stable for a conversation sent to a custom base URL, so inside a session
  only older releases change it per request; across sessions and subagents it still differs.

Whether an endpoint keys its cache on the block is not documented; the provider's reads show it.
A changed block with the read stopping before it names the block as the cause; a read that went
on past it shows the endpoint ignores what changed. To see what the block alone cost, each marker's
prefix is also hashed *without* the block (the "blind" hash): an earlier write whose blind hash
equals this request's but whose prefix hash differs is a prefix only the block kept it from reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from projections.cache.cross_session import WrittenPrefix
from projections.cache.predict.cache_models import TTL_SECONDS
from projections.cache.render.attribution_block import (
    AttributionBlock,
    attribution_block,
    blind_hashes,
    fields_changed,
)
from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import JSON

KEPT_PER_BLIND_HASH = 4
"""Prefixes kept per hash without the block: the latest writes, the ones still alive."""


@dataclass(frozen=True, slots=True)
class BlindWrite:
    """A prefix an earlier request wrote, as the attribution check looks it up."""

    blind_hash: str
    prefix_hash: str
    tokens: int
    written_at: datetime | None
    ttl: str
    attribution: str
    """The header line the writer sent."""
    writer_session: str
    """The writer's session when it is another session, else ""."""
    writer_key: str
    writer_ordinal: int
    endpoint: str = ""
    """The host the writer sent to: another endpoint's cache is not this one's."""

    def alive_at(self, moment: datetime | None) -> bool:
        """Whether the entry was written by ``moment`` and had not expired yet (alive when either
        time is unknown: nothing then says it expired)."""
        if moment is None or self.written_at is None:
            return True
        return self.written_at <= moment < self.written_at + timedelta(seconds=TTL_SECONDS[self.ttl])


@dataclass(frozen=True, slots=True)
class AttributionMiss:
    """What the attribution block did to one request's read."""

    position: int
    text: str
    writer: BlindWrite
    """The longest earlier write the request would have matched without the block."""
    read: int
    """What the provider reported read."""
    before: int
    """Tokens of the prompt ahead of the block (the tools): all a changed block lets be read."""
    ignored: bool
    """The read went on past the block: the endpoint ignores what changed in it."""
    reprocessed: int
    """Of the writer's prefix, the tokens this request did not read (0 when ignored)."""
    rewritten: int
    """Of those, the tokens it wrote to the cache again."""
    endpoint: str

    @property
    def changed(self) -> str:
        """What differs from the writer's block."""
        return fields_changed(self.writer.attribution, self.text)

    def where(self) -> str:
        """Which earlier request wrote the prefix, and where it sits."""
        whose = (
            f"of session {self.writer.writer_session}" if self.writer.writer_session else "of this session"
        )
        return f"request #{self.writer.writer_ordinal + 1} {whose}"

    def detail(self) -> str:
        """One sentence: what changed, what the provider read, and what it means."""
        at = f" at {self.endpoint}" if self.endpoint else ""
        if self.ignored:
            return (
                f"Claude Code's attribution block changed ({self.changed}) from the one {self.where()} "
                f"sent, yet the provider{at} read {self.read:,} tokens, past the block: this endpoint "
                "ignores what changed in it, so it cost nothing here."
            )
        return (
            f"Claude Code's attribution block changed ({self.changed}) from the one {self.where()} "
            f"sent, and the provider{at} read {self.read:,} tokens, no further than the "
            f"{self.before:,} tokens ahead of the block: without it this request would have read the "
            f"{self.writer.tokens:,}-token prefix that request wrote, so {self.reprocessed:,} tokens "
            f"were processed again ({self.rewritten:,} of them written to the cache again)."
        )

    def to_json(self) -> dict[str, JSON]:
        """The figures the pages price: tokens re-processed and re-written, and whether ignored."""
        return {
            "position": self.position,
            "text": self.text,
            "writer_text": self.writer.attribution,
            "changed": self.changed,
            "writer": {
                "session": self.writer.writer_session or None,
                "key": self.writer.writer_key,
                "ordinal": self.writer.writer_ordinal,
            },
            "writer_tokens": self.writer.tokens,
            "read": self.read,
            "before": self.before,
            "ignored": self.ignored,
            "reprocessed": self.reprocessed,
            "rewritten": self.rewritten,
            "endpoint": self.endpoint,
        }


@dataclass(slots=True)
class AttributionIndex:
    """Prefixes earlier requests wrote, by blind hash: this session's as it is walked, and other
    sessions' from their stored render records."""

    by_blind: dict[str, list[BlindWrite]] = field(default_factory=dict)

    def add(self, write: BlindWrite) -> None:
        """Keep ``write`` for the requests after it: the latest write of each prefix, and only the
        latest few prefixes of one blind hash (a block that changes every request writes a new one
        each time; the older ones are expiring, and scanning them all would cost a long session
        a scan per request)."""
        writes = [w for w in self.by_blind.get(write.blind_hash, ()) if w.prefix_hash != write.prefix_hash]
        self.by_blind[write.blind_hash] = [*writes[-(KEPT_PER_BLIND_HASH - 1) :], write]

    def observe(
        self,
        rendered: RenderedRequest,
        *,
        key: str,
        ordinal: int,
        at: datetime | None,
        read: int | None,
        written: int | None,
        lookback: int,
        minimum: int,
        endpoint: str = "",
    ) -> AttributionMiss | None:
        """What the attribution block did to this request's read (:meth:`judge`), then keep what the
        request wrote at its markers past the block for the requests after it: one pass over its
        units for both."""
        block = attribution_block(rendered)
        if block is None:
            return None
        probes = [
            _lookback(rendered, marker.position, block.position, lookback) for marker in rendered.markers
        ]
        blind = blind_hashes(rendered, block, (p for probe in probes for p in probe))
        miss = self._judge(
            rendered, block, blind, probes, at=at, read=read, written=written, endpoint=endpoint
        )
        for marker in rendered.markers:
            blind_hash = blind.get(marker.position)
            tokens = rendered.prefix_tokens(marker.position)
            if blind_hash is None or tokens < minimum:
                continue
            prefix_hash = rendered.prefix_hashes[marker.position]
            self.add(
                BlindWrite(
                    blind_hash, prefix_hash, tokens, at, marker.ttl, block.text, "", key, ordinal, endpoint
                )
            )
        return miss

    def _judge(
        self,
        rendered: RenderedRequest,
        block: AttributionBlock,
        blind: Mapping[int, str],
        probes: Sequence[Sequence[int]],
        *,
        at: datetime | None,
        read: int | None,
        written: int | None,
        endpoint: str,
    ) -> AttributionMiss | None:
        """The longest live prefix that equals this request's but for the block, and what its read
        says of it. ``None`` without a reported read or such a write."""
        if read is None or not self.by_blind:
            return None
        best: BlindWrite | None = None
        for probe in probes:
            for p in probe:
                alive = [
                    w
                    for w in self.by_blind.get(blind[p], ())
                    if w.alive_at(at) and (w.endpoint == endpoint or not (w.endpoint and endpoint))
                ]
                # A live entry with this very prefix (the same block) is read as usual: the block
                # kept nothing from being read here.
                if all(w.prefix_hash != rendered.prefix_hashes[p] for w in alive):
                    for write in alive:
                        if best is None or write.tokens > best.tokens:
                            best = write
        if best is None:
            return None
        past_block = rendered.prefix_tokens(block.position)
        ignored = read > past_block
        reprocessed = 0 if ignored else max(0, best.tokens - read)
        return AttributionMiss(
            position=block.position,
            text=block.text,
            writer=best,
            read=read,
            before=rendered.cum_tokens[block.position],
            ignored=ignored,
            reprocessed=reprocessed,
            rewritten=min(reprocessed, written or 0),
            endpoint=endpoint,
        )


def _lookback(rendered: RenderedRequest, marker: int, block: int, lookback: int) -> list[int]:
    """The positions a breakpoint at ``marker`` looks back over, past the attribution block."""
    groups = rendered.lookback_groups
    out: list[int] = []
    p = marker
    while p > block and groups[marker] - groups[p] < lookback:
        out.append(p)
        p -= 1
    return out


def blind_write_of(write: WrittenPrefix) -> BlindWrite | None:
    """Another session's write as the attribution check looks it up; ``None`` for a write whose
    render record kept no blind hash (a request without the block, or stored before it was kept)."""
    if write.blind_hash is None or write.prefix_hash is None:
        return None
    return BlindWrite(
        write.blind_hash,
        write.prefix_hash,
        write.tokens,
        write.written_at,
        write.ttl,
        write.attribution,
        write.writer.session,
        write.writer.key,
        write.writer.ordinal,
        write.endpoint,
    )
