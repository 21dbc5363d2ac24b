"""Helpers that write small logs for the importer tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import zstandard

from projections.normalized import EventRecord, LineError, RequestRecord, SessionImport

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def header(version: int = 4, session_id: str = "s-1", **extra: Any) -> dict[str, Any]:
    """A dsh header line."""
    return {
        "type": "session",
        "version": version,
        "id": session_id,
        "createdAt": "2026-01-02T03:04:05Z",
        **extra,
    }


def event(seq: int, kind: str = "turn/start", **extra: Any) -> dict[str, Any]:
    """A dsh event line."""
    return {"type": kind, "seq": seq, "time": 1_767_000_000_000 + seq, "data": {"turn": 1}, **extra}


def transcript_line(kind: str, uuid: str, content: Any, *, session: str, **extra: Any) -> dict[str, Any]:
    """A Claude Code transcript line of a user or assistant message of ``session``."""
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg-{uuid}", model="claude-sonnet-4-5-20250929", usage={"input_tokens": 3})
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": session,
        "timestamp": "2026-06-01T10:00:00.000Z",
        "cwd": "/srv/app",
        "message": message,
        **extra,
    }


def jsonl(rows: Iterable[dict[str, Any] | str]) -> bytes:
    """Rows as JSON lines; a string row is written verbatim (for broken lines)."""
    return b"".join((row if isinstance(row, str) else json.dumps(row)).encode() + b"\n" for row in rows)


def zstd_frames(batches: Sequence[Sequence[dict[str, Any] | str]]) -> list[bytes]:
    """One independent zstd frame (with a content checksum) per batch of rows."""
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    return [compressor.compress(jsonl(batch)) for batch in batches]


@pytest.fixture
def write(tmp_path: Path) -> Any:
    """Write bytes to a file under the test's folder and return its path."""

    def _write(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    return _write


def drain(session: SessionImport) -> tuple[list[EventRecord], list[RequestRecord], list[LineError]]:
    """Exhaust a session's items, sorted by kind."""
    events: list[EventRecord] = []
    requests: list[RequestRecord] = []
    errors: list[LineError] = []
    for item in session.items:
        if isinstance(item, EventRecord):
            events.append(item)
        elif isinstance(item, RequestRecord):
            requests.append(item)
        elif isinstance(item, LineError):
            errors.append(item)
    return events, requests, errors
