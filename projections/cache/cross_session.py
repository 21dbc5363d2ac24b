"""Prefixes other sessions of the same source wrote: what a session's requests may read across sessions.

The provider's cache is shared by every request of a workspace, so a compaction call, a subagent or
a parallel session can read a prefix another session wrote minutes before. The analysis of one
session takes those writes as a :class:`PrefixIndex`, built once per session from the other
sessions' requests inside the TTL window (the caller queries them; see
``dashboard.analysis.stored_sessions``):

- with request bodies, each prefix a marker wrote is indexed by its prefix hash and enters the
  predictor's cache state at the moment it was written;
- without bodies (a transcript), a call shows only sizes: the prompt it read and the prompt it left
  cached (read + write). A session's first call whose read equals exactly a size another session
  left cached, for the same model and inside the TTL, reads that session's prefix; nothing else
  in a transcript can name the writer.

Lookups are dictionary probes (by hash, or by model and size), never a scan of every write.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from projections.cache.predict.cache_models import TTL_SECONDS, CacheEntry, CacheState
from projections.cache.results import RequestResult
from projections.normalized import JSON, RequestRecord

WINDOW = timedelta(seconds=TTL_SECONDS["1h"])
"""How far before a session's first request another session's writes are looked for: Anthropic's
longest TTL (an OpenAI entry kept longer and written earlier is not looked for)."""


@dataclass(frozen=True, slots=True)
class WriterRef:
    """The request that wrote a prefix: its session (the store's id or a file's session id), key
    and ordinal."""

    session: str
    key: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class WrittenPrefix:
    """A prefix a request of another session wrote (or refreshed by reading it)."""

    writer: WriterRef
    model: str
    tokens: int
    written_at: datetime
    ttl: str = "5m"
    prefix_hash: str | None = None
    """``None`` for a transcript's call, which shows a size but no bytes."""
    position: int | None = None
    """The unit the prefix ends on, with ``prefix_hash``."""
    blind_hash: str | None = None
    """The prefix's hash without Claude Code's attribution block, when the writer sent one (see
    :mod:`projections.cache.attribution`)."""
    attribution: str = ""
    """The attribution block the writer sent, with ``blind_hash``."""
    endpoint: str = ""
    """The host the writer sent to, with ``blind_hash``."""

    def alive_at(self, moment: datetime) -> bool:
        """Whether the entry was written by ``moment`` and had not expired yet."""
        return self.written_at <= moment < self.written_at + timedelta(seconds=TTL_SECONDS[self.ttl])


@dataclass(slots=True)
class PrefixIndex:
    """Other sessions' writes by size (for transcripts) and in time order (for bodies)."""

    by_size: dict[tuple[str, int], list[WrittenPrefix]] = field(default_factory=dict)
    hashed: list[WrittenPrefix] = field(default_factory=list)
    reader: str = ""
    """The session the index is read for: its own writes are skipped (see :meth:`for_reader`)."""

    @classmethod
    def of(cls, writes: Iterable[WrittenPrefix]) -> PrefixIndex:
        """An index of ``writes``, in any order."""
        index = cls()
        for write in sorted(writes, key=lambda w: w.written_at):
            index.by_size.setdefault((write.model, write.tokens), []).append(write)
            if write.prefix_hash is not None and write.position is not None:
                index.hashed.append(write)
        return index

    def __bool__(self) -> bool:
        return bool(self.by_size)

    def for_reader(self, session: str) -> PrefixIndex:
        """The same index read for ``session``, without its own writes: one index built for every
        session of a run serves each of them."""
        return PrefixIndex(self.by_size, self.hashed, session)

    def _other(self, write: WrittenPrefix) -> bool:
        return not self.reader or write.writer.session != self.reader

    def size_read(self, model: str, tokens: int, at: datetime | None) -> WrittenPrefix | None:
        """The latest write of exactly ``tokens`` for ``model`` still alive at ``at``; ``None``
        without one (or without a time to judge the TTL by)."""
        if at is None or tokens <= 0:
            return None
        found = self.by_size.get((model, tokens), [])
        times = [w.written_at for w in found]
        for write in reversed(found[: bisect.bisect_right(times, at)]):
            if write.alive_at(at) and self._other(write):
                return write
        return None

    def latest_held(self, model: str, at: datetime | None, at_most: int) -> WrittenPrefix | None:
        """The latest write for ``model`` alive at ``at`` of at most ``at_most`` tokens (the largest
        of a writer's sizes): what a call re-sending that context could have read. A scan, for the
        few calls that ask (compactions)."""
        if at is None:
            return None
        found = [
            write
            for (written_model, tokens), writes in self.by_size.items()
            if written_model == model and tokens <= at_most
            for write in writes
            if write.alive_at(at) and self._other(write)
        ]
        return max(found, key=lambda w: (w.written_at, w.tokens), default=None)

    def hashed_between(self, after: datetime | None, until: datetime) -> Iterator[WrittenPrefix]:
        """Writes with a prefix hash made in ``(after, until]`` (from the first when ``after`` is
        ``None``), in time order."""
        times = [w.written_at for w in self.hashed]
        start = 0 if after is None else bisect.bisect_right(times, after)
        yield from (w for w in self.hashed[start : bisect.bisect_right(times, until)] if self._other(w))

    def blind_writes(self) -> Iterator[WrittenPrefix]:
        """Writes whose render record kept a hash without Claude Code's attribution block."""
        yield from (w for w in self.hashed if w.blind_hash is not None and self._other(w))


def read_from_json(writer: WriterRef | None) -> JSON:
    """``data["read_from"]``: the writer's key and ordinal, and its session only when that is
    another session (``None`` for the analysed one)."""
    if writer is None:
        return None
    return {"session": writer.session or None, "key": writer.key, "ordinal": writer.ordinal}


def transcript_writes(
    writer: WriterRef,
    model: str,
    started_at: datetime | None,
    read: int | None,
    write_5m: int | None,
    write_1h: int | None,
) -> list[WrittenPrefix]:
    """What a transcript call left cached: the prompt it read and the prompt it read and wrote."""
    if started_at is None or (read is None and write_5m is None and write_1h is None):
        return []
    ttl = "1h" if write_1h else "5m"
    held = (read or 0) + (write_5m or 0) + (write_1h or 0)
    sizes = {size for size in (read or 0, held) if size > 0}
    return [WrittenPrefix(writer, model, size, started_at, ttl) for size in sorted(sizes)]


def marker_writes(
    writer: WriterRef, model: str, started_at: datetime | None, record: Iterable[JSON]
) -> list[WrittenPrefix]:
    """The prefixes a request's markers wrote, from its analysis's ``record`` rows."""
    if started_at is None:
        return []
    out: list[WrittenPrefix] = []
    for row in record:
        if not isinstance(row, dict):
            continue
        prefix_hash, position, tokens = row.get("prefix_hash"), row.get("position"), row.get("prefix_tokens")
        if isinstance(prefix_hash, str) and isinstance(position, int) and isinstance(tokens, int):
            ttl = row["ttl"] if row.get("ttl") in TTL_SECONDS else "5m"
            blind, attribution, endpoint = row.get("blind_hash"), row.get("attribution"), row.get("endpoint")
            out.append(
                WrittenPrefix(
                    writer,
                    model,
                    tokens,
                    started_at,
                    ttl,
                    prefix_hash,
                    position,
                    blind if isinstance(blind, str) else None,
                    attribution if isinstance(attribution, str) else "",
                    endpoint if isinstance(endpoint, str) else "",
                )
            )
    return out


def request_writes(
    writer: WriterRef, record: RequestRecord, analysis_record: Sequence[JSON]
) -> list[WrittenPrefix]:
    """What one request of another session left cached: its markers' prefixes when its analysis
    recorded them (a request with a body), else the sizes its usage shows."""
    hashed = marker_writes(writer, record.model, record.started_at, analysis_record)
    if hashed:
        return hashed
    usage = record.usage
    if usage is None:
        return []
    return transcript_writes(
        writer, record.model, record.started_at, usage.cache_read, usage.cache_write_5m, usage.cache_write_1h
    )


def session_writes(
    session: str, records: Iterable[RequestRecord], results: Iterable[RequestResult]
) -> list[WrittenPrefix]:
    """Everything an analysed session left cached, for the analysis of the other sessions."""
    by_key = {result.key: result for result in results}
    out: list[WrittenPrefix] = []
    for record in records:
        result = by_key.get(record.key)
        rows = result.data.get("record") if result is not None else None
        writer = WriterRef(session, record.key, record.ordinal)
        out.extend(request_writes(writer, record, rows if isinstance(rows, list) else []))
    return out


def enter_writes(
    state: CacheState,
    foreign: PrefixIndex,
    after: datetime | None,
    until: datetime,
    writers: dict[str, WriterRef],
) -> None:
    """Put the prefixes other sessions wrote in ``(after, until]`` into a predictor's cache state;
    ``writers`` gets the name each entry's writer is known by there.

    An entry this session already holds alive keeps its writer; the other session's write only
    extends its life.
    """
    for write in foreign.hashed_between(after, until):
        if write.prefix_hash is None or write.position is None:
            continue
        moment = write.written_at.timestamp()
        expires = moment + TTL_SECONDS[write.ttl]
        entry = state.entries.get(write.prefix_hash)
        if entry is not None and (entry.expires_at is None or entry.expires_at > moment):
            entry.expires_at = max(entry.expires_at or expires, expires)
            continue
        # Named as the predictor's details print a writer; never a request key of this session.
        name = f"request {write.writer.key} of session {write.writer.session}"
        writers[name] = write.writer
        state.entries[write.prefix_hash] = CacheEntry(
            write.prefix_hash, write.position, write.tokens, write.ttl, expires, moment, name
        )
