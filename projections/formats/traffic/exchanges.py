"""Request/response pairs (claude-trace, captures, connectome llm-calls) as sessions.

Each pair becomes one :class:`RequestRecord` (``body`` = the request JSON as sent) and one
``cache/request`` event, with seqs contiguous from 0. A file is one session unless its records
carry a session or conversation id; then each id is a session, read by its own filtered pass over
the file so interleaved sessions still stream in constant memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from projections.formats.reading.lines import LogLines
from projections.normalized import (
    JSON,
    EventRecord,
    Lineage,
    LineError,
    RequestRecord,
    SessionImport,
    SessionItem,
    Usage,
)
from projections.providers.diagnosis import ProviderDiagnosis
from projections.usage import UsageError, normalize_usage, usage_to_dsh

SESSION_ID_KEYS = ("session_id", "sessionId", "conversation_id", "conversationId")


class BadRecord(ValueError):
    """A record that cannot be read as a pair; ``field`` names the offending key."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True, slots=True)
class Exchange:
    """One provider call read from a record, before it gets its session's seq and ordinal."""

    key: str
    lineage: Lineage
    provider: str
    platform: str
    api: str
    model: str
    body: Mapping[str, JSON] | None
    usage_shape: str
    raw_usage: JSON
    status: int | None
    started_at: datetime | None
    first_token_at: datetime | None = None
    betas: tuple[str, ...] = ()
    diagnosis: ProviderDiagnosis | None = None
    client_version: str = ""
    endpoint: str = ""

    def record(
        self, *, key: str, ordinal: int, usage: Usage | None, line: int, lineage: Lineage | None = None
    ) -> RequestRecord:
        """The call as a request record, once its session has given it a key and an ordinal."""
        return RequestRecord(
            key=key,
            ordinal=ordinal,
            lineage=lineage or self.lineage,
            provider=self.provider,
            platform=self.platform,
            api=self.api,
            model=self.model,
            started_at=self.started_at,
            first_token_at=self.first_token_at,
            body=self.body,
            usage=usage,
            status=self.status,
            line=line,
            betas=self.betas,
            provider_diagnosis=self.diagnosis,
            client_version=self.client_version,
            endpoint=self.endpoint,
        )


ExchangeParser = Callable[[dict[str, JSON]], Exchange | None]
"""Reads one record; ``None`` for a record that is not a call (tolerated), ``BadRecord`` when broken."""


def platform_of(url: JSON, default: str) -> str:
    """Where a call went, from its URL host (Bedrock and Vertex serve Anthropic models too)."""
    if not isinstance(url, str) or not url:
        return default
    host = urlsplit(url).hostname or ""
    if "bedrock" in host:
        return "bedrock"
    if "aiplatform.googleapis.com" in host:
        return "vertex"
    if host.endswith("anthropic.com"):
        return "anthropic"
    if host.endswith("openai.com"):
        return "openai"
    if "openrouter" in host:
        return "openrouter"
    if "deepseek" in host:
        return "deepseek"
    return default


def endpoint_of(url: JSON) -> str:
    """The host (and port, when one is named) a call's URL names; empty without a URL."""
    if not isinstance(url, str) or not url:
        return ""
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2] or ""


def record_session_id(value: Mapping[str, JSON]) -> str | None:
    """The session or conversation id a capture record carries, if any."""
    for key in SESSION_ID_KEYS:
        found = value.get(key)
        if isinstance(found, str) and found:
            return found
    return None


def read_exchange_sessions(
    path: Path, format_name: str, parse: ExchangeParser, *, group_by_id: bool
) -> Iterator[SessionImport]:
    """The sessions of one pairs file: the whole file, or one per carried session id."""
    stem = path.name.removesuffix(".jsonl")
    ids: list[str] = []
    has_loose = False
    if group_by_id:
        seen: set[str] = set()
        with LogLines(path) as log:
            for line in log.json_lines():
                if line.value is None:
                    continue
                found = record_session_id(line.value)
                if found is None:
                    has_loose = True
                elif found not in seen:
                    seen.add(found)
                    ids.append(found)
    if not ids:
        yield _session(path, format_name, stem, parse, lambda value: True, report_errors=True)
        return
    groups: list[tuple[str, Callable[[dict[str, JSON]], bool]]] = [
        (session_id, _matching(session_id)) for session_id in ids
    ]
    if has_loose:
        groups.append((stem, lambda value: record_session_id(value) is None))
    for index, (external_id, keep) in enumerate(groups):
        yield _session(path, format_name, external_id, parse, keep, report_errors=index == 0)


def _matching(session_id: str) -> Callable[[dict[str, JSON]], bool]:
    return lambda value: record_session_id(value) == session_id


def _session(
    path: Path,
    format_name: str,
    external_id: str,
    parse: ExchangeParser,
    keep: Callable[[dict[str, JSON]], bool],
    *,
    report_errors: bool,
) -> SessionImport:
    session = SessionImport(external_id=external_id, format=format_name, path=str(path), items=iter(()))
    session.items = _items(path, session, parse, keep, report_errors)
    return session


def _items(
    path: Path,
    session: SessionImport,
    parse: ExchangeParser,
    keep: Callable[[dict[str, JSON]], bool],
    report_errors: bool,
) -> Iterator[SessionItem]:
    name = str(path)
    seq = 0
    with LogLines(path) as log:
        for line in log.json_lines():
            if line.error is not None and report_errors:
                yield line.error
            if line.notice is not None and report_errors:
                yield line.notice
            if line.value is None:
                continue
            if not keep(line.value):
                continue
            try:
                exchange = parse(line.value)
            except BadRecord as bad:
                if report_errors:
                    yield LineError(name, line.number, bad.field, bad.reason)
                continue
            if exchange is None:
                continue
            usage: Usage | None = None
            if exchange.raw_usage is not None:
                try:
                    usage = normalize_usage(exchange.usage_shape, exchange.raw_usage)
                except UsageError as error:
                    yield LineError(name, line.number, f"usage.{error.field}", error.reason)
            yield cache_request_event(seq, exchange, usage, line.number)
            yield exchange.record(
                key=exchange.key or f"line-{line.number}", ordinal=seq, usage=usage, line=line.number
            )
            seq += 1
            if session.started_at is None:
                session.started_at = exchange.started_at
            if exchange.started_at is not None:
                session.ended_at = exchange.started_at
        session.crash_tail = log.crash_tail


def cache_request_event(seq: int, exchange: Exchange, usage: Usage | None, line: int) -> EventRecord:
    """The ``cache/request`` event that stands for one call in its session's log, at ``seq``."""
    data: dict[str, JSON] = {
        "requestRef": exchange.key or f"line-{line}",
        "model": exchange.model,
        "provider": exchange.provider,
        "api": exchange.api,
        "lineage": exchange.lineage,
    }
    if usage is not None:
        data["usage"] = usage_to_dsh(usage)
    if exchange.status is not None:
        data["status"] = exchange.status
    return EventRecord(seq=seq, type="cache/request", time=exchange.started_at, data=data, line=line)
