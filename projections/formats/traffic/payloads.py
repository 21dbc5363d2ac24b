"""Reading the request and response halves of a logged provider call, whatever wrapped them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from projections.client_version import user_agent_version
from projections.formats.reading.storable import TooDeep, decode_storable
from projections.formats.traffic.exchanges import BadRecord
from projections.formats.traffic.sse import StreamSummary, anthropic_stream, openai_stream
from projections.normalized import JSON
from projections.providers.diagnosis import ProviderDiagnosis, anthropic_diagnosis, openai_diagnosis


@dataclass(frozen=True, slots=True)
class ResponseFacts:
    """What a response half states: its id, model, raw usage, HTTP status and the provider's cache
    diagnosis."""

    id: str
    model: str
    usage: JSON
    status: int | None
    request_id: str
    diagnosis: ProviderDiagnosis | None = None


def json_body(value: JSON, field: str) -> dict[str, JSON] | None:
    """A JSON object body, decoding it when it was logged as text; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        # A body logged as text is decoded with the same bounds as a line: nesting, NUL, surrogates.
        try:
            value = decode_storable(value).value
        except json.JSONDecodeError as error:
            raise BadRecord(field, f"body is not JSON: {error}") from None
        except TooDeep as error:
            raise BadRecord(field, f"body is {error}") from None
    if not isinstance(value, dict):
        raise BadRecord(field, f"expected a JSON object, got {type(value).__name__}")
    return value


def status_of(value: JSON, field: str) -> int | None:
    """An HTTP status code, or ``None`` when not logged."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise BadRecord(field, f"expected an HTTP status, got {value!r}")
    return int(value)


def header(headers: JSON, name: str) -> str:
    """A header value by case-insensitive name ("" when absent)."""
    if not isinstance(headers, dict):
        return ""
    for key, value in headers.items():
        if key.lower() == name:
            return value if isinstance(value, str) else ""
    return ""


def request_client_version(headers: JSON) -> str:
    """The client release a request's ``User-Agent`` names (see :mod:`projections.client_version`)."""
    return user_agent_version(header(headers, "user-agent"))


def anthropic_betas(headers: JSON) -> tuple[str, ...]:
    """The ``anthropic-beta`` values a request sent (a comma-separated header), in order."""
    value = header(headers, "anthropic-beta")
    return tuple(part.strip() for part in value.split(",") if part.strip())


def response_facts(response: JSON, provider: str, field: str = "response") -> ResponseFacts:
    """Read a response logged as a body, or as ``{status_code|status, headers, body|body_raw}``."""
    if response is None:
        return ResponseFacts("", "", None, None, "")
    if not isinstance(response, dict):
        raise BadRecord(field, f"expected an object, got {type(response).__name__}")
    # A bare OpenAI Responses body has "status": "completed"; only an integer status marks an envelope.
    wrapped = any(key in response for key in ("body", "body_raw", "status_code", "headers")) or (
        isinstance(response.get("status"), int) and not isinstance(response.get("status"), bool)
    )
    if not wrapped:
        return _from_body(response, None, "", provider)
    status = status_of(response.get("status_code", response.get("status")), f"{field}.status_code")
    request_id = header(response.get("headers"), "request-id") or header(
        response.get("headers"), "x-request-id"
    )
    body = response.get("body")
    if isinstance(body, str):
        parsed = _maybe_json(body)
        if parsed is None:
            return _from_stream(body, provider, status, request_id)
        body = parsed
    if isinstance(body, dict):
        return _from_body(body, status, request_id, provider)
    if body is not None:
        raise BadRecord(f"{field}.body", f"expected an object or text, got {type(body).__name__}")
    raw = response.get("body_raw")
    if isinstance(raw, str):
        return _from_stream(raw, provider, status, request_id)
    return ResponseFacts("", "", None, status, request_id)


def _maybe_json(text: str) -> dict[str, JSON] | None:
    try:
        value = decode_storable(text).value
    except (json.JSONDecodeError, TooDeep):
        return None
    return value if isinstance(value, dict) else None


def _from_body(body: Mapping[str, JSON], status: int | None, request_id: str, provider: str) -> ResponseFacts:
    usage = body.get("usage", body.get("usageMetadata"))
    error = "error" in body and body.get("type") == "error"
    return ResponseFacts(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        usage=None if error else usage,
        status=status,
        request_id=request_id,
        diagnosis=anthropic_diagnosis(body) if provider == "anthropic" else openai_diagnosis(body),
    )


def _from_stream(text: str, provider: str, status: int | None, request_id: str) -> ResponseFacts:
    summary: StreamSummary = anthropic_stream(text) if provider == "anthropic" else openai_stream(text)
    return ResponseFacts(summary.id, summary.model, summary.usage, status, request_id, summary.diagnosis)
