"""Request/response captures from any proxy: Anthropic Messages, OpenAI Chat Completions and Responses.

A record is ``{request, response, started_at?, first_token_at?}``; ``request`` is the body as sent
or ``{url, headers, body}``, ``response`` the body received or ``{status, headers, body | body_raw}``.
A record may carry ``session_id`` / ``conversation_id``; then the file holds one session per id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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

ANTHROPIC_FORMAT = "anthropic-capture"
OPENAI_FORMAT = "openai-capture"


def _request_parts(value: dict[str, JSON]) -> tuple[dict[str, JSON] | None, JSON]:
    request = value.get("request")
    if (
        isinstance(request, dict)
        and "body" in request
        and "messages" not in request
        and "input" not in request
    ):
        return json_body(request.get("body"), "request.body"), request.get("url")
    return json_body(request, "request"), value.get("url")


def _response_body(value: dict[str, JSON]) -> dict[str, JSON]:
    response = value.get("response")
    if isinstance(response, dict):
        body = response.get("body")
        return body if isinstance(body, dict) else response
    return {}


def capture_api(value: dict[str, JSON]) -> str:
    """``messages``, ``chat`` or ``responses``: the API a capture record's pair belongs to."""
    body, url = _request_parts(value)
    response = _response_body(value)
    path = url if isinstance(url, str) else ""
    if path.endswith("/responses") or response.get("object") == "response":
        return "responses"
    if (
        path.endswith("/chat/completions")
        or "choices" in response
        or response.get("object") == "chat.completion"
    ):
        return "chat"
    if body is not None and "input" in body and "messages" not in body:
        return "responses"
    if response.get("type") == "message" or path.endswith("/messages"):
        return "messages"
    if body is not None and ("system" in body or ("max_tokens" in body and "messages" in body)):
        return "messages"
    return "chat" if body is not None and "messages" in body else "messages"


def is_capture_record(value: dict[str, JSON]) -> bool:
    """Whether a record is a request/response pair."""
    return isinstance(value.get("request"), dict) and "response" in value


def parse_capture_record(value: dict[str, JSON]) -> Exchange | None:
    """One provider call of a capture record."""
    if not isinstance(value.get("request"), dict):
        raise BadRecord("request", "expected an object")
    body, url = _request_parts(value)
    api = capture_api(value)
    provider = "anthropic" if api == "messages" else "openai"
    facts = response_facts(value.get("response"), provider)
    shape = {"messages": "anthropic", "chat": "openai", "responses": "openai-responses"}[api]
    request_headers = value["request"].get("headers")
    started = value.get("started_at", value.get("timestamp"))
    if started is None and isinstance(value.get("request"), dict):
        started = value["request"].get("timestamp")
    return Exchange(
        key=facts.request_id or facts.id,
        lineage="main",
        provider=provider,
        platform=platform_of(url, provider),
        api=api,
        model=str((body or {}).get("model") or facts.model),
        body=body,
        usage_shape=shape,
        raw_usage=facts.usage if facts.status is None or facts.status < 400 else None,
        status=facts.status,
        started_at=optional_time(started, numbers="auto"),
        first_token_at=optional_time(value.get("first_token_at"), numbers="auto"),
        betas=anthropic_betas(request_headers) if provider == "anthropic" else (),
        diagnosis=facts.diagnosis,
        client_version=request_client_version(request_headers),
        endpoint=endpoint_of(url),
    )


def read_capture(path: Path, format_name: str) -> Iterator[SessionImport]:
    """The sessions of a capture file: one per file, or one per carried session id."""
    yield from read_exchange_sessions(path, format_name, parse_capture_record, group_by_id=True)
