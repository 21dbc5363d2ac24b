"""A corpus of bad inputs, written by code into a folder: every way a log can be wrong that we answer.

Each case is a small file (or a baseline plus a bad copy of the same session) and the error it must
produce: the file, the line or seq, and the field. Two cases are large by nature — a 100 MB line and
a zstd bomb — and are streamed to disk, never built in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from tests.dashboard.logs import dsh_lines

BASE_MS = 1_767_225_600_000


@dataclass(frozen=True)
class BadInput:
    """One bad file and what reading it must say."""

    name: str
    path: Path
    """The bad file."""
    field: str
    """The field named by the error (a line error, a fatal session error or an unfoldable reason)."""
    line: int | None = None
    seq: int | None = None
    words: str = ""
    """Words the error's reason must contain."""
    where: str = "line-error"
    """``line-error`` (a bad line), ``line-notice`` (a line stored after replacing characters no
    database holds), ``fatal`` (the session is refused), ``unfoldable`` (kept, cannot be
    folded), ``fold-error`` (stored; the fold stops there), ``render-warning`` (stored with a warning),
    ``crash-tail`` (an incomplete last record, dropped)."""
    baseline: Path | None = None
    """A valid earlier copy of the same session, stored first: the bad file must not change it."""
    format: str | None = None
    external_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _line(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def _write_lines(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON lines; a ``bytes`` row is written verbatim (for broken lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(row if isinstance(row, bytes) else _line(row) for row in rows))
    return path


def _dsh_pair(folder: Path, name: str, turns: int = 2) -> tuple[str, list[dict[str, Any]], Path]:
    """A session id, its valid rows, and a baseline file holding them."""
    session_id = f"bad-{name}"
    rows = dsh_lines(session_id, turns=turns)
    baseline = _write_lines(folder / "baseline" / session_id / "session.jsonl", rows)
    return session_id, rows, baseline


def _bad_path(folder: Path, session_id: str, suffix: str = "session.jsonl") -> Path:
    return folder / "bad" / session_id / suffix


def truncated_line(folder: Path) -> BadInput:
    """Line 4 cut in half, with its newline: a bad line in the middle, not a crash tail."""
    sid, rows, baseline = _dsh_pair(folder, "truncated-line")
    broken = _line(rows[3])[:25] + b"\n"
    path = _write_lines(_bad_path(folder, sid), [*rows[:3], broken, *rows[4:]])
    return BadInput("truncated-line", path, "json", line=4, baseline=baseline, external_id=sid)


def truncated_tail(folder: Path) -> BadInput:
    """The last line cut short with no newline: a write cut by a crash, dropped and described."""
    sid, rows, baseline = _dsh_pair(folder, "truncated-tail")
    broken = _line(rows[-1])[:30]
    path = _write_lines(_bad_path(folder, sid), [*rows[:-1], broken])
    return BadInput(
        "truncated-tail", path, "crash_tail", line=6, words="incomplete last line", where="crash-tail",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def invalid_utf8(folder: Path) -> BadInput:
    """Bytes that are not UTF-8 inside a user message."""
    sid, rows, baseline = _dsh_pair(folder, "invalid-utf8")
    good = _line(rows[2])
    broken = good.replace(b"question 1", b"question \xff\xfe\xc3(")
    path = _write_lines(_bad_path(folder, sid), [*rows[:2], broken, *rows[3:]])
    return BadInput("invalid-utf8", path, "json", line=3, words="UTF-8", baseline=baseline, external_id=sid)


def lone_surrogate(folder: Path) -> BadInput:
    """Valid JSON whose string escapes a lone UTF-16 surrogate: no UTF-8 text can hold it."""
    sid, rows, baseline = _dsh_pair(folder, "lone-surrogate")
    broken = _line(rows[2]).replace(b"question 1", b"question \\ud800 1")
    path = _write_lines(_bad_path(folder, sid), [*rows[:2], broken, *rows[3:]])
    return BadInput(
        "lone-surrogate",
        path,
        "json",
        line=3,
        words="surrogate",
        baseline=baseline,
        external_id=sid,
        where="line-notice",
    )


def nul_character(folder: Path) -> BadInput:
    """A ``\\u0000`` inside a string: valid JSON that PostgreSQL's text and jsonb cannot store."""
    sid, rows, baseline = _dsh_pair(folder, "nul-character")
    broken = _line(rows[2]).replace(b"question 1", b"question \\u0000 1")
    path = _write_lines(_bad_path(folder, sid), [*rows[:2], broken, *rows[3:]])
    return BadInput(
        "nul-character",
        path,
        "json",
        line=3,
        words="U+0000",
        baseline=baseline,
        external_id=sid,
        where="line-notice",
    )


def deep_json(folder: Path, depth: int = 10_000) -> BadInput:
    """An event whose data nests ``depth`` arrays deep."""
    sid, rows, baseline = _dsh_pair(folder, "deep-json")
    nested = b"[" * depth + b"]" * depth
    broken = _line(rows[2]).replace(b'"source": {"kind": "user"}', b'"source": ' + nested)
    assert nested in broken
    path = _write_lines(_bad_path(folder, sid), [*rows[:2], broken, *rows[3:]])
    return BadInput("deep-json", path, "json", line=3, words="nested", baseline=baseline, external_id=sid)


def seq_gap(folder: Path) -> BadInput:
    """Seq 3 missing: 0, 1, 2, 4. Every event is kept and one notice says a number is missing."""
    sid, rows, baseline = _dsh_pair(folder, "seq-gap", turns=3)
    path = _write_lines(_bad_path(folder, sid), [*rows[:4], *rows[5:]])
    return BadInput(
        "seq-gap", path, "seq", line=5, seq=4, words="1 seq number is missing", where="line-notice",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def seq_duplicate(folder: Path) -> BadInput:
    """Seq 2 written twice, the second time with another type."""
    sid, rows, baseline = _dsh_pair(folder, "seq-duplicate")
    again = {**rows[3], "type": "turn/start", "data": {"turn": 9}}
    path = _write_lines(_bad_path(folder, sid), [*rows[:4], again, *rows[4:]])
    return BadInput(
        "seq-duplicate", path, "seq", line=5, seq=2, words="repeats", baseline=baseline, external_id=sid
    )


def unknown_type(folder: Path, *, ignorable: bool) -> BadInput:
    """An event type nobody knows, with or without ``ignorable``."""
    name = "unknown-type-ignorable" if ignorable else "unknown-type"
    sid, rows, baseline = _dsh_pair(folder, name)
    extra = {"type": "vendor/telemetry", "seq": 5, "time": BASE_MS + 5000, "data": {"x": 1}}
    if ignorable:
        extra["ignorable"] = True
    path = _write_lines(_bad_path(folder, sid), [*rows, extra])
    if ignorable:
        return BadInput(name, path, "", seq=5, where="clean", baseline=baseline, external_id=sid)
    return BadInput(
        name, path, "type", seq=5, words="unknown event type 'vendor/telemetry'", where="unfoldable",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def replacement_without_claim(folder: Path) -> BadInput:
    """A system prompt put over a range of messages with no claim armed: v6 cannot order it."""
    sid, rows, baseline = _dsh_pair(folder, "replace-no-claim")
    replace = {
        "type": "system/message",
        "seq": 5,
        "time": BASE_MS + 5000,
        "data": {"turn": 3, "step": 0, "message": {"role": "system", "content": "You are brief."}},
        "surfaceOp": {"op": "replace", "start": 1, "end": 2},
        "sourceEventSeqs": [1, 2],
    }
    path = _write_lines(_bad_path(folder, sid), [*rows, replace])
    return BadInput(
        "replace-no-claim", path, "rule", seq=5, words="unmetered-system-insert", where="fold-error",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def claim_for_another_range(folder: Path) -> BadInput:
    """A compaction claims positions 1..2 and the replacement that follows covers 2..3."""
    sid, rows, baseline = _dsh_pair(folder, "claim-other-range")
    summary = {
        "type": "compaction/summary",
        "seq": 5,
        "time": BASE_MS + 5000,
        "data": {
            "compactionId": "c1",
            "summary": "earlier talk",
            "shadowedRange": {"start": 1, "end": 2},
            "shadowedSeqs": [1, 2],
            "shadowedTokenCount": 20,
        },
    }
    replace = {
        "type": "user/message",
        "seq": 6,
        "time": BASE_MS + 6000,
        "data": {
            "id": "c",
            "role": "user",
            "content": "summary",
            "source": {"kind": "plugin", "plugin": "compact"},
        },
        "surfaceOp": {"op": "replace", "start": 2, "end": 3},
        "sourceEventSeqs": [2, 3],
    }
    path = _write_lines(_bad_path(folder, sid), [*rows, summary, replace])
    return BadInput(
        "claim-other-range", path, "rule", seq=6, words="claim", where="fold-error",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def zstd_bad_checksum(folder: Path) -> BadInput:
    """Three frames; the second's content checksum is flipped. Lines before it stay readable."""
    sid, rows, baseline = _dsh_pair(folder, "zstd-checksum")
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    frames = [
        compressor.compress(b"".join(_line(r) for r in rows[:2])),
        bytearray(compressor.compress(b"".join(_line(r) for r in rows[2:4]))),
        compressor.compress(b"".join(_line(r) for r in rows[4:])),
    ]
    frames[1][-1] ^= 0xFF  # the last byte belongs to the 4-byte content checksum
    path = _bad_path(folder, sid, "session.jsonl.zstd")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(bytes(frame) for frame in frames))
    return BadInput(
        "zstd-checksum", path, "zstd", line=3, words="zstd frame 1", baseline=baseline, external_id=sid
    )


def unknown_version(folder: Path) -> BadInput:
    """A header version we do not know: the session is refused as a whole, with the field named."""
    sid, rows, baseline = _dsh_pair(folder, "unknown-version")
    path = _write_lines(_bad_path(folder, sid), [{**rows[0], "version": 7}, *rows[1:]])
    return BadInput(
        "unknown-version", path, "version", line=1, words="unsupported header version 7", where="fatal",
        baseline=baseline, external_id=sid,
    )  # fmt: skip


def _transcript_line(kind: str, uuid: str, second: int, **fields: Any) -> dict[str, Any]:
    return {
        "sessionId": "cc-bad-usage",
        "cwd": "/work/demo",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-02-01T10:00:{second:02d}.000Z",
        "isSidechain": False,
        **fields,
    }


def _assistant_line(
    uuid: str, second: int, message_id: str, request_id: str, usage: dict[str, Any]
) -> dict[str, Any]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": f"reply {uuid}"}],
        "usage": usage,
    }
    return _transcript_line("assistant", uuid, second, message=message, requestId=request_id)


def _usage(input_tokens: Any, read: Any = 0, output: Any = 10) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": read,
        "output_tokens": output,
    }


def transcript_conflicting_call(folder: Path) -> BadInput:
    """Two calls share ``message.id`` and ``requestId`` but report different prompt usage."""
    path = _write_lines(
        folder / "bad" / "claude" / "cc-conflict.jsonl",
        [
            _transcript_line("user", "u1", 0, message={"role": "user", "content": "hi"}),
            _assistant_line("a1", 1, "msg_same", "req_same", _usage(5, 1000)),
            _transcript_line("user", "u2", 2, message={"role": "user", "content": "again"}),
            _assistant_line("a2", 3, "msg_same", "req_same", _usage(7, 5000)),
        ],
    )
    return BadInput(
        "transcript-conflicting-call", path, "message.usage", line=4, words="msg_same",
        format="claude-code", external_id="cc-bad-usage",
    )  # fmt: skip


def transcript_bad_usage(folder: Path) -> BadInput:
    """Usage with a negative count, then one absurdly large; both refused by field and line."""
    path = _write_lines(
        folder / "bad" / "claude" / "cc-usage.jsonl",
        [
            _transcript_line("user", "u1", 0, message={"role": "user", "content": "hi"}),
            _assistant_line("a1", 1, "msg_neg", "req_neg", _usage(-5)),
            _transcript_line("user", "u2", 2, message={"role": "user", "content": "again"}),
            _assistant_line("a2", 3, "msg_big", "req_big", _usage(10, 10**30)),
        ],
    )
    return BadInput(
        "transcript-bad-usage", path, "message.usage.input_tokens", line=2, words="non-negative",
        format="claude-code", external_id="cc-bad-usage",
        extra={"second": ("message.usage.cache_read_input_tokens", 4, "absurd")},
    )  # fmt: skip


def five_markers(folder: Path) -> BadInput:
    """An Anthropic request with five cache breakpoints: the provider refuses it; we keep a warning."""
    marked = {"type": "ephemeral"}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "tools": [{"name": "t1", "input_schema": {}, "cache_control": marked}],
        "system": [
            {"type": "text", "text": "s1", "cache_control": marked},
            {"type": "text", "text": "s2", "cache_control": marked},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q1", "cache_control": marked}]},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": [{"type": "text", "text": "q2", "cache_control": marked}]},
        ],
    }
    response = {
        "id": "msg_five",
        "type": "message",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        },
    }
    path = _write_lines(
        folder / "bad" / "capture" / "five-markers.jsonl",
        [{"started_at": BASE_MS, "request": body, "response": response}],
    )
    return BadInput(
        "five-markers", path, "markers", line=1, words="marker-limit: 5", where="render-warning",
        format="anthropic-capture", external_id="five-markers",
    )  # fmt: skip


CASES: dict[str, Callable[[Path], BadInput]] = {
    "truncated-line": truncated_line,
    "truncated-tail": truncated_tail,
    "invalid-utf8": invalid_utf8,
    "lone-surrogate": lone_surrogate,
    "nul-character": nul_character,
    "deep-json": deep_json,
    "seq-gap": seq_gap,
    "seq-duplicate": seq_duplicate,
    "unknown-type": lambda folder: unknown_type(folder, ignorable=False),
    "unknown-type-ignorable": lambda folder: unknown_type(folder, ignorable=True),
    "replace-no-claim": replacement_without_claim,
    "claim-other-range": claim_for_another_range,
    "zstd-checksum": zstd_bad_checksum,
    "unknown-version": unknown_version,
    "transcript-conflicting-call": transcript_conflicting_call,
    "transcript-bad-usage": transcript_bad_usage,
    "five-markers": five_markers,
}


# --- the large cases, streamed to disk --------------------------------------------------------------


def write_huge_line_log(path: Path, *, line_bytes: int = 100 * 1024 * 1024) -> Path:
    """A dsh log whose line 3 is a user message of ``line_bytes`` bytes; written in 1 MB pieces."""
    rows = dsh_lines("bad-huge-line", turns=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    head, tail = _line(rows[2]).split(b"question 1", 1)
    piece = b"x" * (1 << 20)
    with path.open("wb") as out:
        for row in rows[:2]:
            out.write(_line(row))
        out.write(head)
        remaining = line_bytes - len(head) - len(tail)
        while remaining > 0:
            out.write(piece[: min(len(piece), remaining)])
            remaining -= len(piece)
        out.write(tail)
        for row in rows[3:]:
            out.write(_line(row))
    return path


def write_zstd_bomb(path: Path, *, expanded_bytes: int = 4 * 1024**3) -> Path:
    """A dsh ``session.jsonl.zstd`` of a valid header frame, then one frame that inflates to
    ``expanded_bytes`` of spaces with no newline (a few hundred KB on disk), then a valid event frame.
    """
    rows = dsh_lines("bad-zstd-bomb", turns=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    compressor = zstandard.ZstdCompressor(level=19, write_checksum=True)
    piece = b" " * (1 << 22)
    with path.open("wb") as out:
        out.write(compressor.compress(_line(rows[0]) + _line(rows[1])))
        writer = compressor.stream_writer(out, size=expanded_bytes, closefd=False)
        remaining = expanded_bytes
        while remaining > 0:
            count = min(len(piece), remaining)
            writer.write(piece[:count])
            remaining -= count
        writer.flush(zstandard.FLUSH_FRAME)
        writer.close()
        out.write(compressor.compress(b"\n" + b"".join(_line(r) for r in rows[2:])))
    return path
