"""Reading an API request's body: streamed into a spooled file, gunzipped on the way when sent gzip,
and refused as a whole once it passes the size limit, before any line of it is parsed.

The limit holds for the decompressed bytes too, counted while inflating in bounded steps, so a gzip
bomb is refused after ``max_bytes`` of output and never inflated in memory.
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Protocol

READ_CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 8 * 1024 * 1024
"""A decompressed body larger than this is spooled to a temporary file, not kept in memory."""


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class BodyRejected(Exception):
    """A body the API refuses as a whole, with the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)


def body_read(
    *,
    stream: Readable,
    content_length: int | None,
    content_encoding: str,
    max_bytes: int,
    into: IO[bytes] | None = None,
) -> IO[bytes]:
    """Read a request body into a spooled file (or ``into``), refusing it once it passes ``max_bytes``.

    The limit holds for the bytes received and, for gzip, for the bytes decompressed, which are
    counted while streaming in bounded steps: a gzip bomb is refused after ``max_bytes`` of output,
    never inflated in memory. Raises :class:`BodyRejected` (413, 415 or 400).
    """
    encoding = content_encoding.strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        raise BodyRejected(415, f"Content-Encoding {content_encoding!r} is not supported; send gzip or none")
    if content_length is not None and content_length > max_bytes:
        raise BodyRejected(413, f"body of {content_length} bytes exceeds the limit of {max_bytes} bytes")
    spool: IO[bytes] = into or tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
    try:
        if encoding in ("gzip", "x-gzip"):
            _copy_gunzipped(stream, spool, max_bytes)
        else:
            _copy(stream, spool, max_bytes)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _chunks(stream: Readable, max_bytes: int) -> Iterator[bytes]:
    received = 0
    while chunk := stream.read(READ_CHUNK):
        received += len(chunk)
        if received > max_bytes:
            raise BodyRejected(413, f"body exceeds the limit of {max_bytes} bytes")
        yield chunk


def _copy(stream: Readable, spool: IO[bytes], max_bytes: int) -> None:
    for chunk in _chunks(stream, max_bytes):
        spool.write(chunk)


def _copy_gunzipped(stream: Readable, spool: IO[bytes], max_bytes: int) -> None:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    written = 0
    for chunk in _chunks(stream, max_bytes):
        pending = chunk
        while pending:
            try:
                out = inflater.decompress(pending, READ_CHUNK)
            except zlib.error as error:
                raise BodyRejected(400, f"body is not valid gzip: {error}") from None
            written += len(out)
            if written > max_bytes:
                raise BodyRejected(
                    413, f"decompressed body exceeds the limit of {max_bytes} bytes; send smaller batches"
                )
            spool.write(out)
            if inflater.eof:
                # Concatenated gzip members are one stream (what `cat a.gz b.gz` makes).
                pending = inflater.unused_data
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if pending else inflater
            else:
                pending = inflater.unconsumed_tail
    if not inflater.eof:
        raise BodyRejected(400, "body is truncated gzip: the stream ends before its last member does")
