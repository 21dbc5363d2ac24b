"""claude-trace logs (``.claude-trace/log-*.jsonl``): full Messages requests with their responses.

Each line is ``{request: {timestamp, method, url, headers, body}, response: {timestamp,
status_code, headers, body | body_raw}, logged_at}``; ``body_raw`` is the SSE stream, whose usage
is in ``message_start`` and ``message_delta``. Calls without tools are Claude Code's side calls
(quota probes, titles) and get lineage ``side``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from projections.formats.reading.times import optional_time
from projections.formats.traffic.exchanges import (
    BadRecord,
    Exchange,
    endpoint_of,
    platform_of,
    read_exchange_sessions,
)
from projections.formats.traffic.payloads import (
    anthropic_betas,
    json_body,
    request_client_version,
    response_facts,
)
from projections.normalized import JSON, SessionImport

FORMAT = "claude-trace"


def is_claude_trace_record(value: dict[str, JSON]) -> bool:
    """Whether a record has claude-trace's shape (a request with method and timestamp, or ``logged_at``)."""
    request = value.get("request")
    if not isinstance(request, dict) or "response" not in value:
        return False
    return "logged_at" in value or ("method" in request and "timestamp" in request)


def parse_trace_record(value: dict[str, JSON]) -> Exchange | None:
    """One Messages call of a claude-trace line; ``None`` for traffic to other endpoints."""
    request = value.get("request")
    if not isinstance(request, dict):
        raise BadRecord("request", "expected an object")
    url = request.get("url")
    path = urlsplit(url).path if isinstance(url, str) else ""
    if not path.endswith("/messages"):
        return None
    body = json_body(request.get("body"), "request.body")
    facts = response_facts(value.get("response"), "anthropic")
    model = str((body or {}).get("model") or facts.model)
    tools = (body or {}).get("tools")
    return Exchange(
        key=facts.request_id or facts.id,
        lineage="main" if tools else "side",
        provider="anthropic",
        platform=platform_of(url, "anthropic"),
        api="messages",
        model=model,
        body=body,
        usage_shape="anthropic",
        raw_usage=facts.usage if facts.status is None or facts.status < 400 else None,
        status=facts.status,
        started_at=optional_time(request.get("timestamp"), numbers="auto"),
        betas=anthropic_betas(request.get("headers")),
        diagnosis=facts.diagnosis,
        client_version=request_client_version(request.get("headers")),
        endpoint=endpoint_of(url),
    )


def read_claude_trace(path: Path) -> Iterator[SessionImport]:
    """A claude-trace file as one session named after the file."""
    yield from read_exchange_sessions(path, FORMAT, parse_trace_record, group_by_id=False)
