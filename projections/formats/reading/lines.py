"""Bounded, streaming reading of JSON-lines logs, plain or zstd-framed.

Lines are read with a size cap so that one enormous line (or a decompression bomb) fails with a
clear error instead of exhausting memory; nothing reads a whole file at once. Line numbers are
1-based lines of the file, or of the decompressed stream for zstd.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from projections.formats.reading.storable import TooDeep, decode_storable
from projections.formats.reading.zstd_frames import ZstdCorruption, ZstdFramesStream, is_zstd_file
from projections.normalized import JSON, LineError, LineNotice

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line accepted, after decompression; a longer one is a line error."""

_SKIP_CHUNK = 1 << 20
ZSTD_SUFFIXES = (".zstd", ".zst")


@dataclass(frozen=True, slots=True)
class RawLine:
    """One line of a log: its bytes (``None`` when it was refused) and where it lies."""

    number: int
    offset: int
    """Byte offset of the line in the (decompressed) stream."""
    data: bytes | None
    terminated: bool
    error: str = ""
    end: int = 0
    """Byte offset just after the line, newline included (a refused line's bytes count too)."""


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One decoded JSON object of a log, or the error that replaced it.

    A line with a ``notice`` was repaired to be storable (see :mod:`projections.formats.reading.storable`):
    its value is kept, and the notice says which characters were replaced.
    """

    number: int
    offset: int
    value: dict[str, JSON] | None
    error: LineError | None = None
    notice: LineNotice | None = None
    terminated: bool = True
    """Whether the line ended with its newline; only a file's last line can lack one."""


def is_zstd_path(path: Path) -> bool:
    """Whether ``path`` is zstd-compressed, by its name or its first bytes."""
    if path.name.endswith(ZSTD_SUFFIXES):
        return True
    with path.open("rb") as fh:
        return is_zstd_file(fh.read(4))


def iter_raw_lines(
    stream: BinaryIO, *, start: int = 0, max_line_bytes: int = MAX_LINE_BYTES, lines_before: int = 0
) -> Iterator[RawLine]:
    """Split ``stream`` into lines of at most ``max_line_bytes``; a longer line is refused, not kept.

    ``start`` and ``lines_before``: the byte offset and the number of lines of the file before the
    stream's position, so that offsets and line numbers stay those of the whole file.
    """
    number = lines_before
    offset = start
    while True:
        data = stream.readline(max_line_bytes + 1)
        if not data:
            return
        number += 1
        if len(data) > max_line_bytes:
            length = len(data)
            terminated = data.endswith(b"\n")
            while not terminated:
                more = stream.readline(_SKIP_CHUNK)
                if not more:
                    break
                length += len(more)
                terminated = more.endswith(b"\n")
            reason = f"line of {length} bytes exceeds the {max_line_bytes}-byte limit"
            yield RawLine(number, offset, None, terminated, reason, offset + length)
            offset += length
            continue
        yield RawLine(number, offset, data, data.endswith(b"\n"), end=offset + len(data))
        offset += len(data)


class LogLines:
    """A log file opened for line reading; use as a context manager and iterate :meth:`json_lines`.

    After iteration, ``crash_tail`` describes a dropped incomplete record (a truncated zstd frame,
    or an unterminated last line that is not valid JSON), and ``corrupted`` tells whether reading
    stopped at a corrupted zstd frame (reported as a line error).

    ``start`` and ``lines_before`` resume a plain log after its first ``lines_before`` lines, which
    end at byte ``start``. While lines are read, ``consumed`` and ``consumed_lines`` follow the end of
    the last line read whole, newline included: where a later read of the grown file takes up.
    """

    def __init__(
        self, path: Path, *, max_line_bytes: int = MAX_LINE_BYTES, start: int = 0, lines_before: int = 0
    ) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.crash_tail = ""
        self.corrupted = False
        self.start = start
        self.lines_before = lines_before
        self.consumed = start
        self.consumed_lines = lines_before
        self._file: BinaryIO | None = None
        self._frames: ZstdFramesStream | None = None
        self._stream: BinaryIO | None = None

    def __enter__(self) -> LogLines:
        fh = self.path.open("rb")
        self._file = fh
        if is_zstd_file(fh.read(4)) or self.path.name.endswith(ZSTD_SUFFIXES):
            if self.start:
                fh.close()
                raise ValueError(f"{self.path}: a zstd log is read from its start only")
            self._frames = ZstdFramesStream(fh)
            self._stream = io.BufferedReader(self._frames, buffer_size=1 << 16)
        else:
            fh.seek(self.start)
            self._stream = fh
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()

    def line_at(self, offset: int) -> RawLine | None:
        """The line starting at a byte offset of a plain (uncompressed) log, for readers that index lines."""
        if self._frames is not None or self._stream is None:
            raise ValueError(f"{self.path}: only a plain log can be read at an offset")
        self._stream.seek(offset)
        return next(iter_raw_lines(self._stream, start=offset, max_line_bytes=self.max_line_bytes), None)

    def raw_lines(self) -> Iterator[RawLine]:
        """Every line, bounded; a zstd corruption ends the stream with one refused line."""
        if self._stream is None:
            raise ValueError(f"{self.path}: LogLines used outside its context")
        last_number = self.lines_before
        last_offset = self.start
        lines = iter_raw_lines(
            self._stream, start=self.start, max_line_bytes=self.max_line_bytes, lines_before=self.lines_before
        )
        try:
            for line in lines:
                last_number, last_offset = line.number, line.offset + len(line.data or b"")
                if line.terminated:
                    # Counted before the line is handed on: a reader's state taken after the loop
                    # has seen it, and one taken before an unterminated line has not.
                    self.consumed, self.consumed_lines = line.end, line.number
                yield line
        except ZstdCorruption as corruption:
            self.corrupted = True
            yield RawLine(last_number + 1, last_offset, None, False, f"corrupted {corruption}")
        if self._frames is not None and self._frames.crash_tail:
            self.crash_tail = self._frames.crash_tail

    def json_lines(self) -> Iterator[JsonLine]:
        """Every non-empty line decoded as a JSON object, or a :class:`LineError` in its place."""
        path = str(self.path)
        for line in self.raw_lines():
            if line.data is None:
                field = "zstd" if self.corrupted else "line"
                yield JsonLine(
                    line.number, line.offset, None, LineError(path, line.number, field, line.error)
                )
                continue
            if not line.data.strip():
                continue
            try:
                decoded = decode_storable(line.data)
            except (UnicodeDecodeError, json.JSONDecodeError, TooDeep) as error:
                if not line.terminated:
                    # An unterminated last line that does not parse is a write cut short by a crash.
                    self.crash_tail = f"line {line.number}: incomplete last line ({len(line.data)} bytes)"
                    return
                yield JsonLine(
                    line.number, line.offset, None, LineError(path, line.number, "json", _reason(error))
                )
                continue
            value = decoded.value
            if not isinstance(value, dict):
                reason = f"expected a JSON object, got {type(value).__name__}"
                yield JsonLine(line.number, line.offset, None, LineError(path, line.number, "json", reason))
                continue
            notice = LineNotice(path, line.number, "json", decoded.repaired) if decoded.repaired else None
            yield JsonLine(line.number, line.offset, value, notice=notice, terminated=line.terminated)


def _reason(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return f"invalid UTF-8 at byte {error.start} of the line ({error.reason})"
    return str(error)
