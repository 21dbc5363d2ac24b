"""connectome-host ``llm-calls.<iso>.jsonl``: one line per Anthropic call made by the host.

A line is ``{type: "call"|"error", kind: "stream"|"complete"|"keepalive", timestamp, durationMs,
requestSummary, rawRequest?, rawResponse?, error?}``. ``timestamp`` is written when the call ends,
so the start is ``timestamp - durationMs``. ``rawRequest`` is present only when full payloads are
on (or for refusals and errors). Agent turns stream; ``complete`` calls are compression and
maintenance and ``keepalive`` calls refresh the cache, so both are side calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from projections.formats.reading.times import optional_time
from projections.formats.traffic.exchanges import BadRecord, Exchange, read_exchange_sessions
from projections.formats.traffic.payloads import json_body
from projections.normalized import JSON, SessionImport
from projections.providers.diagnosis import anthropic_diagnosis

FORMAT = "connectome"


def is_connectome_record(value: dict[str, JSON]) -> bool:
    """Whether a record has the llm-calls shape."""
    return "requestSummary" in value or ("rawResponse" in value and value.get("type") in ("call", "error"))


def parse_connectome_record(value: dict[str, JSON]) -> Exchange | None:
    """One call of an llm-calls line."""
    summary = value.get("requestSummary")
    if summary is not None and not isinstance(summary, dict):
        raise BadRecord("requestSummary", f"expected an object, got {type(summary).__name__}")
    response = value.get("rawResponse")
    if response is not None and not isinstance(response, dict):
        raise BadRecord("rawResponse", f"expected an object, got {type(response).__name__}")
    body = json_body(value.get("rawRequest"), "rawRequest")
    duration = value.get("durationMs")
    ended = optional_time(value.get("timestamp"), numbers="auto")
    started = ended
    if ended is not None and isinstance(duration, int | float) and not isinstance(duration, bool):
        started = ended - timedelta(milliseconds=duration)
    model = (summary or {}).get("model") or (body or {}).get("model") or (response or {}).get("model") or ""
    return Exchange(
        key=str((response or {}).get("id") or ""),
        lineage="main" if value.get("kind") == "stream" else "side",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=str(model),
        body=body,
        usage_shape="anthropic",
        raw_usage=(response or {}).get("usage") if value.get("type") != "error" else None,
        status=None,
        started_at=started,
        diagnosis=anthropic_diagnosis(response),
    )


def read_connectome(path: Path) -> Iterator[SessionImport]:
    """An llm-calls file as one session (one host process lifetime)."""
    yield from read_exchange_sessions(path, FORMAT, parse_connectome_record, group_by_id=False)
