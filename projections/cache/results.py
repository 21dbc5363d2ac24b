"""What the analysis of a session's requests gives back: one result per request and the findings.

A :class:`RequestResult` carries the request's analysis as plain JSON (``data``, the shape the store
keeps and the pages and ``explain`` read) and the figures a database would index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from projections.cache.explain.warnings import CacheWarning
from projections.normalized import JSON

CLIENT_RECORD_PLACE = "client record"
"""Places of unreadable client records (and of stored requests that cannot be rebuilt) start with
this, so the store of findings owns exactly those ingest errors."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A self-check warning before it is stored: kind, place, message and the request that showed it."""

    kind: str
    place: str
    message: str
    request_key: str | None
    seq: int | None = None
    """The event it concerns, when it concerns one rather than a request."""


@dataclass(frozen=True, slots=True)
class HostNote:
    """A line the host logged about its own cache (``cache/log``): context, not a finding."""

    seq: int
    time: datetime | None
    level: str
    line: str
    request_key: str | None


@dataclass(slots=True)
class RequestResult:
    """The analysis of one request: its plain-JSON ``data`` and the figures kept beside it."""

    key: str
    data: dict[str, JSON]
    label: str
    material: bool
    predicted_read: int | None
    predicted_write: int | None
    wire_allows: int | None
    credited: int | None
    has_body: bool
    """Whether the request was logged with its body (the remedy of a miss depends on it)."""


@dataclass(slots=True)
class RecordsAnalysis:
    """Every request's result in ordinal order, the findings, the host's notes, and how many client
    records matched nothing."""

    results: list[RequestResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    host_notes: list[HostNote] = field(default_factory=list)
    unmatched_records: int = 0


def finding_of(warning: CacheWarning) -> Finding:
    """A self-check warning as a finding of the request that showed it."""
    return Finding(warning.kind, warning.place, warning.message, warning.request)
