"""One call as the proxy saw it, and the claude-trace record it is stored as.

The proxy fills a :class:`CapturedCall` on its event loop with headers already stripped of
credentials and the response's bytes as they passed; everything that costs time (decompressing,
decoding JSON) happens in :meth:`CapturedCall.trace_record`, on the recorder's thread.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import zstandard

from dashboard.ingest.recording.headers import header_value, stored_url

MAX_RECORDED_BYTES = 64 * 1024 * 1024
"""A response body longer than this is passed on whole but recorded only up to here."""
_FIRST_ID = re.compile(rb'"id"\s*:\s*"([^"]{1,200})"')
_ID_WINDOW = 64 * 1024


@dataclass(slots=True)
class CapturedCall:
    """A call passed through the proxy; headers are the stored (credential-free) ones."""

    call_id: str
    session_id: str
    """Empty until the call is placed in a conversation (by the proxy or, later, the recorder)."""
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    started_at: float
    api: str = "messages"
    session_header: str = ""
    """The client's own ``x-cachescope-session``, which names the session outright."""
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    recorded_bytes: int = 0
    truncated: bool = False
    first_byte_at: float | None = None
    finished_at: float | None = None
    error: str = ""

    def add_chunk(self, chunk: bytes, now: float) -> None:
        """Keep a passed chunk (up to :data:`MAX_RECORDED_BYTES`), noting when the first came."""
        if self.first_byte_at is None:
            self.first_byte_at = now
        if self.recorded_bytes + len(chunk) > MAX_RECORDED_BYTES:
            self.truncated = True
            return
        self.chunks.append(chunk)
        self.recorded_bytes += len(chunk)

    def request_json(self) -> dict[str, Any] | None:
        """The request body as a JSON object; ``None`` when it is not one."""
        try:
            value = orjson.loads(self.request_body)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def response_id(self) -> str:
        """The id of the answer: the first ``"id"`` of its body, which is an Anthropic message's, an
        OpenAI completion's or response's, both in a whole body and in a stream's first event."""
        head = b"".join(self.chunks)[:_ID_WINDOW]
        if header_value(self.response_headers, "content-encoding").strip().lower() in ("gzip", "x-gzip"):
            try:
                head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _ID_WINDOW)
            except zlib.error:
                return ""
        found = _FIRST_ID.search(head)
        return found.group(1).decode("utf-8", errors="replace") if found else ""

    def trace_record(self) -> dict[str, Any]:
        """The call as a claude-trace record, with the proxy's own notes under ``cachescope``."""
        notes: dict[str, Any] = {"call_id": self.call_id, "session": self.session_id}
        if self.error:
            notes["error"] = self.error
        if self.truncated:
            notes["truncated_at_bytes"] = MAX_RECORDED_BYTES
        record: dict[str, Any] = {
            "request": {
                "timestamp": self.started_at,
                "method": self.method,
                "url": stored_url(self.url),
                "headers": self.request_headers,
                "body": _json_or_text(self.request_body),
            },
            "response": self._response(notes),
            "logged_at": datetime.now(UTC).isoformat(),
            "cachescope": notes,
        }
        if self.first_byte_at is not None:
            record["first_token_at"] = self.first_byte_at
        return record

    def _response(self, notes: dict[str, Any]) -> dict[str, Any] | None:
        if self.status is None:
            return None
        response: dict[str, Any] = {
            "timestamp": self.finished_at or self.started_at,
            "status_code": self.status,
            "headers": self.response_headers,
        }
        try:
            raw = _decoded(b"".join(self.chunks), header_value(self.response_headers, "content-encoding"))
        except ValueError as error:
            notes["response_undecoded"] = str(error)
            return response
        if "text/event-stream" in header_value(self.response_headers, "content-type"):
            response["body_raw"] = raw.decode("utf-8", errors="replace")
        else:
            response["body"] = _json_or_text(raw)
        return response


def _json_or_text(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _decoded(raw: bytes, encoding: str) -> bytes:
    """The body without its content coding; ``ValueError`` for one this build cannot undo."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return raw
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            return zlib.decompress(raw)
        if coding == "zstd":
            return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        if coding == "br":
            return _brotli(raw)
    except (zlib.error, zstandard.ZstdError) as error:
        raise ValueError(f"{coding} body does not decompress: {error}") from None
    raise ValueError(f"content coding {coding!r} is not supported")


def _brotli(raw: bytes) -> bytes:
    try:
        import brotli  # type: ignore[import-not-found]  # optional: aiohttp's own brotli extra
    except ImportError:
        raise ValueError("br body: install the brotli package to record it") from None
    return bytes(brotli.decompress(raw))
