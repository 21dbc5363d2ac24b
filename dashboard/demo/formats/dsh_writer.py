"""dsh session files: ``session.jsonl``, multi-frame ``session.jsonl.zstd`` and ``session_projcache.json``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from dashboard.demo.formats.dsh_log import DshLog
from projections.normalized import EventRecord

ZSTD_LEVEL = 3


def dumps(line: dict[str, Any]) -> str:
    """One log line as the harness writes it: compact JSON, UTF-8."""
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def write_session(directory: Path, log: DshLog, *, zstd: bool) -> Path:
    """Write ``log`` into ``directory``; a zstd log gets one frame for the header and one per batch."""
    directory.mkdir(parents=True, exist_ok=True)
    chunks = [dumps(log.header) + "\n"]
    chunks += ["".join(dumps(line) + "\n" for line in batch) for batch in log.batches if batch]
    if zstd:
        path = directory / "session.jsonl.zstd"
        compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
        with path.open("wb") as out:
            for chunk in chunks:
                out.write(compressor.compress(chunk.encode("utf-8")))
    else:
        path = directory / "session.jsonl"
        with path.open("w", encoding="utf-8", newline="\n") as out:
            out.writelines(chunks)
    return path


def projcache(log: DshLog) -> dict[str, Any]:
    """The host's projection cache for ``log``: its ``contextBreakdown`` and ``tokenUsage`` rows."""
    last_seq = log.next_seq - 1
    system = next((node.price for node in reversed(log.nodes) if node.system and node.price > 0), 0)
    total = log.surface_tokens
    counts = log.counts
    usage = {
        "inputTokens": counts.uncached_input,
        "cacheReadTokens": counts.cache_read,
        "cacheWriteTokens": counts.cache_write,
        "outputTokens": counts.output,
    }
    breakdown = {"systemTokens": system, "messageTokens": max(0, total - system)}
    return {
        "identity": {"sessionId": log.session_id, "version": log.version, "events": counts.events},
        "rows": {
            "contextBreakdown": {"ver": 5, "seq": last_seq, "val": breakdown},
            "tokenUsage": {"ver": 1, "seq": last_seq, "val": usage},
        },
    }


def write_projcache(directory: Path, log: DshLog) -> Path:
    """Write ``session_projcache.json`` beside the session log."""
    path = directory / "session_projcache.json"
    path.write_text(json.dumps(projcache(log), indent=2) + "\n", encoding="utf-8")
    return path


def event_records(log: DshLog) -> Iterator[EventRecord]:
    """The log's events as normalized records, packed chunk rows expanded, in seq order."""
    for batch in log.batches:
        for line in batch:
            yield from _records(line)


def _records(line: dict[str, Any]) -> Iterator[EventRecord]:
    if "seq0" in line:
        data = line["data"]
        moment = line["time0"]
        for i, member in enumerate(data.get("texts") or data["args"]):
            moment += data["dt"][i - 1] if i else 0
            yield EventRecord(
                seq=line["seq0"] + i,
                type="assistant/chunk",
                time=_time(moment),
                data={
                    "turn": data["turn"],
                    "step": data["step"],
                    "chunk": _chunk(line["type"], data, member),
                },
            )
        return
    seqs = line.get("sourceEventSeqs")
    yield EventRecord(
        seq=line["seq"],
        type=line["type"],
        time=_time(line["time"]),
        data=line["data"],
        surface_op=line.get("surfaceOp"),
        source_event_seqs=tuple(seqs) if seqs is not None else None,
        ignorable=bool(line.get("ignorable", False)),
    )


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _chunk(kind: str, data: dict[str, Any], member: str) -> dict[str, Any]:
    if kind == "tool-call-chunks":
        return {
            "type": "tool-call-delta",
            "index": data["index"],
            "id": data["id"],
            "name": data["name"],
            "argumentsDelta": member,
        }
    delta = "text-delta" if kind == "text-chunks" else "reasoning-delta"
    return {"type": delta, "index": data["index"], "text": member}
