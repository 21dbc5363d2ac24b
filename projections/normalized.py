"""Normalized records: what every importer produces and everything downstream consumes.

An importer turns one source format into a stream of :class:`SessionImport` objects. Each carries
the session's own facts and a lazy iterator of its items (events, provider requests and the line
errors met on the way), so a large log flows through in constant memory: the consumer must
exhaust ``items`` before it asks the importer for the next session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from projections.hit_rate import hit_rate
from projections.providers.diagnosis import ProviderDiagnosis

JSON = Any
"""A value decoded from JSON (dict, list, str, int, float, bool or None)."""

Lineage = Literal["main", "subagent", "side", "compaction"]
"""Where a session or request sits: the main chain, a subagent's chain, a side call, or a
compaction's summarising call."""

UsageConvention = Literal["anthropic", "openai", "gemini", "deepseek", "openrouter", "dsh"]
"""How the source counted cache tokens: ``anthropic`` and ``dsh`` report them beside the input
count; the others include them in the prompt count. Kept so a figure can be traced to its field."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported token usage in exclusive buckets.

    A bucket is ``None`` when the provider did not report it, which is not the same as 0: a hit rate
    over unreported buckets is unknown, not zero.
    """

    uncached_input: int | None
    cache_read: int | None
    cache_write_5m: int | None
    cache_write_1h: int | None
    output: int | None
    convention: UsageConvention
    raw: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def cache_write(self) -> int | None:
        """Both write buckets together, or ``None`` when neither was reported."""
        if self.cache_write_5m is None and self.cache_write_1h is None:
            return None
        return (self.cache_write_5m or 0) + (self.cache_write_1h or 0)

    @property
    def prompt_total(self) -> int | None:
        """Every prompt token the provider processed: uncached + read + writes."""
        parts = (self.uncached_input, self.cache_read, self.cache_write)
        if all(part is None for part in parts):
            return None
        return sum(part or 0 for part in parts)

    @property
    def hit_rate(self) -> float | None:
        """read ÷ (uncached + read + writes), by the rule of :func:`projections.hit_rate.hit_rate`."""
        return hit_rate(read=self.cache_read, uncached=self.uncached_input, writes=self.cache_write)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event of a session's append-only log (DESIGN §4)."""

    seq: int
    type: str
    time: datetime | None
    data: Mapping[str, JSON]
    surface_op: JSON = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False
    line: int | None = None
    """The line of the source file the event came from, for error messages."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One provider call as sent and answered.

    ``body`` is the request JSON as sent on the wire when the source logged it; transcript-only
    sources (Claude Code) leave it ``None`` and give usage alone. The cache engine renders ``body``
    into content-addressed units; importers never do.
    """

    key: str
    """Stable identity inside the session (provider request id, or a derived key), for idempotency."""
    ordinal: int
    lineage: Lineage
    provider: str
    """``anthropic``, ``openai``, ``gemini``, ``deepseek`` or ``openrouter``."""
    platform: str
    """Where the call went: ``anthropic``, ``bedrock``, ``vertex``, ``openai``, ... ."""
    api: str
    """The request shape: ``messages``, ``chat`` or ``responses``."""
    model: str
    started_at: datetime | None = None
    first_token_at: datetime | None = None
    body: Mapping[str, JSON] | None = None
    usage: Usage | None = None
    status: int | None = None
    """HTTP status of the response when known; an error response has no usage."""
    line: int | None = None
    betas: tuple[str, ...] = ()
    """The request's ``anthropic-beta`` values when the source logged its headers (e.g. the 1M window)."""
    provider_diagnosis: ProviderDiagnosis | None = None
    """The provider's own reason for a cache miss, when its response stated one (see
    :mod:`projections.providers.diagnosis`)."""
    client_version: str = ""
    """The client release that sent the call, ``"<client> <version>"`` (see
    :mod:`projections.client_version`); empty when the source does not say."""
    endpoint: str = ""
    """The host the call was sent to (``api.anthropic.com``, a gateway, a local server) when the
    source logged its URL: endpoints differ in what their cache keys on."""


@dataclass(frozen=True, slots=True)
class LineError:
    """A bad line of an input file. Reported, never fatal for the rest of the file."""

    path: str
    line: int | None
    field: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.reason}"


@dataclass(frozen=True, slots=True)
class LineNotice:
    """A line that was stored after a change that made it storable (a NUL or a lone surrogate
    replaced). Reported beside the errors, never counted among them: nothing of the line was lost
    but those characters."""

    path: str
    line: int | None
    field: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.reason}"


SessionItem = EventRecord | RequestRecord | LineError | LineNotice


@dataclass(slots=True)
class SessionImport:
    """One session read from a source, with a lazy stream of its items.

    Fields that are only known once the items are read (``ended_at``, ``unfoldable``, ``crash_tail``,
    ``fatal``, and ``title`` where the log names itself as it goes) are final after ``items`` is
    exhausted.
    """

    external_id: str
    format: str
    path: str
    items: Iterator[SessionItem]
    format_version: str = ""
    title: str = ""
    cwd: str = ""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    parent_external_id: str | None = None
    lineage: Lineage = "main"
    unfoldable: str = ""
    """Why the log cannot be folded (e.g. an unknown event type without ``ignorable``); empty if it can."""
    crash_tail: str = ""
    """A description of an incomplete last record (a truncated zstd frame), which is dropped."""
    fatal: str = ""
    """Why the whole session was refused (e.g. an unknown header version); nothing of it is stored."""
    labels: dict[str, str] = field(default_factory=dict)
    """Who or what the session belongs to, as its source named them (telemetry's ``user.email``,
    ``organization.id``, ...); the sessions list filters by them."""


class FormatError(ValueError):
    """Input that cannot be read at all, with the file, line and field in the message."""

    def __init__(self, path: str, line: int | None, field: str, reason: str) -> None:
        self.error = LineError(path=path, line=line, field=field, reason=reason)
        super().__init__(str(self.error))
