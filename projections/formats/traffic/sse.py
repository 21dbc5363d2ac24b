"""Server-sent event bodies of streamed responses, reduced to what the importers need."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from projections.formats.reading.storable import TooDeep, decode_storable
from projections.normalized import JSON
from projections.providers.diagnosis import ProviderDiagnosis, anthropic_diagnosis, openai_diagnosis


def sse_data(body: str) -> Iterator[dict[str, JSON]]:
    """The JSON objects of every ``data:`` field of an SSE body (``[DONE]`` and bad data skipped)."""
    for raw in body.splitlines():
        line = raw.strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            value = decode_storable(payload).value
        except (json.JSONDecodeError, TooDeep):
            continue
        if isinstance(value, dict):
            yield value


@dataclass(slots=True)
class StreamSummary:
    """What a streamed response said about itself: id, model, usage, the provider's cache diagnosis
    and any error."""

    id: str = ""
    model: str = ""
    usage: dict[str, JSON] | None = None
    error: str = ""
    events: int = field(default=0)
    diagnosis: ProviderDiagnosis | None = None


def anthropic_stream(body: str) -> StreamSummary:
    """Usage of an Anthropic Messages stream: ``message_start`` usage, updated by ``message_delta``;
    the cache diagnosis is on ``message_start``'s message."""
    summary = StreamSummary()
    for event in sse_data(body):
        summary.events += 1
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = event["message"]
            summary.id = str(message.get("id") or "")
            summary.model = str(message.get("model") or "")
            summary.diagnosis = anthropic_diagnosis(message)
            usage = message.get("usage")
            if isinstance(usage, dict):
                summary.usage = dict(usage)
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            # A delta's counts are cumulative: each key it states replaces the start's.
            summary.usage = {**(summary.usage or {}), **event["usage"]}
        elif kind == "error":
            error = event.get("error")
            summary.error = json.dumps(error) if error is not None else "error event"
    return summary


def openai_stream(body: str) -> StreamSummary:
    """Usage of an OpenAI stream: the chunk with ``usage`` (Chat) or ``response.completed``
    (Responses), whose response also carries the prompt cache diagnosis."""
    summary = StreamSummary()
    for event in sse_data(body):
        summary.events += 1
        response = event.get("response")
        source = response if isinstance(response, dict) else event
        if source.get("id") and not summary.id:
            summary.id = str(source["id"])
        if source.get("model"):
            summary.model = str(source["model"])
        if isinstance(source.get("usage"), dict):
            summary.usage = dict(source["usage"])
        summary.diagnosis = openai_diagnosis(source) or summary.diagnosis
        if event.get("type") in ("error", "response.failed"):
            summary.error = json.dumps(event.get("error") or source.get("error"))
    return summary
