"""A concatenation of independent zstd frames read as one decompressed byte stream, frame by frame.

dsh writes ``session.jsonl.zstd`` as one frame for the header and one per append batch. A frame
is located by walking its header and block headers (RFC 8878 §3.1.1) without decompressing it,
so an incomplete last frame — a crash during an append — is recognised before any of it is read
and is reported as a crash tail, while everything before it is kept. A complete frame is
decompressed twice: once to verify it (content checksum, block structure) with its output
discarded, and once to stream it; so a corrupted frame contributes no line at all and memory
stays bounded by the read size, never by the frame size.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO, BinaryIO, cast

import zstandard

ZSTD_MAGIC = 0xFD2FB528
SKIPPABLE_MAGIC_LOW = 0x184D2A50
SKIPPABLE_MAGIC_HIGH = 0x184D2A5F
READ_SIZE = 1 << 20
"""Decompressed bytes asked of the decoder at a time."""

_DICT_ID_BYTES = (0, 1, 2, 4)
_CONTENT_SIZE_BYTES = (0, 2, 4, 8)
_BLOCK_RLE = 1
_BLOCK_RESERVED = 3


class ZstdCorruption(Exception):
    """A complete frame that cannot be decompressed (bad checksum, bad block, bad magic)."""

    def __init__(self, frame_index: int, offset: int, reason: str) -> None:
        self.frame_index = frame_index
        self.offset = offset
        self.reason = reason
        super().__init__(f"zstd frame {frame_index} at byte offset {offset}: {reason}")


@dataclass(frozen=True, slots=True)
class FrameSpan:
    """Where one frame lies in the compressed file; ``complete`` is False for a truncated frame."""

    index: int
    start: int
    end: int
    complete: bool
    skippable: bool = False


def is_zstd_file(path_head: bytes) -> bool:
    """Whether the first four bytes of a file are a zstd (or skippable) frame magic."""
    if len(path_head) < 4:
        return False
    magic = int.from_bytes(path_head[:4], "little")
    return magic == ZSTD_MAGIC or SKIPPABLE_MAGIC_LOW <= magic <= SKIPPABLE_MAGIC_HIGH


def scan_frame(fh: BinaryIO, index: int, start: int, size: int) -> FrameSpan:
    """Locate the frame beginning at ``start`` of a file of ``size`` bytes without decoding it."""

    def read_at(position: int, count: int) -> bytes:
        fh.seek(position)
        return fh.read(count)

    def truncated() -> FrameSpan:
        return FrameSpan(index=index, start=start, end=size, complete=False)

    head = read_at(start, 5)
    if len(head) < 4:
        return truncated()
    magic = int.from_bytes(head[:4], "little")
    if SKIPPABLE_MAGIC_LOW <= magic <= SKIPPABLE_MAGIC_HIGH:
        length = read_at(start + 4, 4)
        if len(length) < 4:
            return truncated()
        end = start + 8 + int.from_bytes(length, "little")
        if end > size:
            return truncated()
        return FrameSpan(index=index, start=start, end=end, complete=True, skippable=True)
    if magic != ZSTD_MAGIC:
        raise ZstdCorruption(index, start, f"bad frame magic 0x{magic:08x}")
    if len(head) < 5:
        return truncated()
    descriptor = head[4]
    if descriptor & 0x08:
        raise ZstdCorruption(index, start, "reserved bit set in the frame header descriptor")
    single_segment = bool(descriptor & 0x20)
    content_size_flag = descriptor >> 6
    content_size_bytes = _CONTENT_SIZE_BYTES[content_size_flag]
    if content_size_flag == 0 and single_segment:
        content_size_bytes = 1
    header = 1 + (0 if single_segment else 1) + _DICT_ID_BYTES[descriptor & 0x03] + content_size_bytes
    position = start + 4 + header
    while True:
        block_header = read_at(position, 3)
        if len(block_header) < 3:
            return truncated()
        value = int.from_bytes(block_header, "little")
        block_type = (value >> 1) & 0x03
        if block_type == _BLOCK_RESERVED:
            raise ZstdCorruption(index, start, f"reserved block type at byte offset {position}")
        block_size = value >> 3
        position += 3 + (1 if block_type == _BLOCK_RLE else block_size)
        if position > size:
            return truncated()
        if value & 0x01:
            break
    if descriptor & 0x04:
        position += 4
    if position > size:
        return truncated()
    return FrameSpan(index=index, start=start, end=position, complete=True)


class _RangeReader(io.RawIOBase):
    """A read-only view of ``[start, end)`` of a seekable file, sharing its handle."""

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        self._fh = fh
        self._position = start
        self._end = end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self._end - self._position)
        if count <= 0:
            return 0
        self._fh.seek(self._position)
        data = self._fh.read(count)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def _frame_reader(fh: BinaryIO, span: FrameSpan) -> zstandard.ZstdDecompressionReader:
    source = cast(IO[bytes], _RangeReader(fh, span.start, span.end))
    return zstandard.ZstdDecompressor().stream_reader(source, read_size=READ_SIZE, read_across_frames=False)


def verify_frame(fh: BinaryIO, span: FrameSpan) -> None:
    """Decompress ``span`` with its output discarded; raise :class:`ZstdCorruption` if it is bad."""
    reader = _frame_reader(fh, span)
    try:
        while reader.read(READ_SIZE):
            pass
    except zstandard.ZstdError as error:
        raise ZstdCorruption(span.index, span.start, str(error)) from None
    finally:
        reader.close()  # type: ignore[no-untyped-call]


class ZstdFramesStream(io.RawIOBase):
    """The decompressed bytes of every complete, verified frame of a file, in order.

    Reading stops at an incomplete last frame (``crash_tail`` then describes it) and raises
    :class:`ZstdCorruption` at the first frame that fails verification.
    """

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        fh.seek(0, io.SEEK_END)
        self._size = fh.tell()
        self._next_start = 0
        self._next_index = 0
        self._current: zstandard.ZstdDecompressionReader | None = None
        self._current_span: FrameSpan | None = None
        self._finished = False
        self.crash_tail = ""
        self.frames_read = 0

    def readable(self) -> bool:
        return True

    def _open_next_frame(self) -> bool:
        while self._next_start < self._size:
            span = scan_frame(self._fh, self._next_index, self._next_start, self._size)
            self._next_index += 1
            self._next_start = span.end
            if not span.complete:
                self.crash_tail = (
                    f"zstd frame {span.index} at byte offset {span.start} is incomplete "
                    f"({span.end - span.start} bytes); it was dropped"
                )
                return False
            if span.skippable:
                continue
            verify_frame(self._fh, span)
            self._current = _frame_reader(self._fh, span)
            self._current_span = span
            return True
        return False

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._finished:
            if self._current is None and not self._open_next_frame():
                self._finished = True
                break
            assert self._current is not None
            assert self._current_span is not None
            try:
                data = self._current.read(len(buffer))
            except zstandard.ZstdError as error:
                span = self._current_span
                raise ZstdCorruption(span.index, span.start, str(error)) from None
            if data:
                buffer[: len(data)] = data
                return len(data)
            self._current.close()  # type: ignore[no-untyped-call]
            self._current = None
            self.frames_read += 1
        return 0
