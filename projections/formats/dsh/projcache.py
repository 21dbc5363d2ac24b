"""dsh projection cache files (``session_projcache.json``): the host's own fold rows for a session.

They are not sessions. A file is ``{identity, rows: {key: {ver, seq, val}}}`` (or the same under a
``record`` key, as the harness writes per-session files). ``identity`` is a session id string or an
object; the harness's object holds ``formatVersion``, ``createdAt``, ``cwd`` and ``isSeeded`` and
may hold ``id`` / ``sessionId``. When it names no session, the id comes from a dsh log beside the
file or, for a ``<id>.json`` file, from its name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from projections.format_names import PROJCACHE_NAME
from projections.formats.dsh.sessions import read_header
from projections.normalized import JSON, FormatError, LineError

MAX_PROJCACHE_BYTES = 64 * 1024 * 1024
"""Projection caches are small JSON documents; a larger file is refused before it is read."""
SESSION_LOG_NAMES = ("session.jsonl.zstd", "session.jsonl")


@dataclass(frozen=True, slots=True)
class ProjCacheRow:
    """One cached projection state: the view of ``key`` after event ``seq`` under state version ``ver``."""

    key: str
    ver: int
    seq: int
    val: JSON


@dataclass(frozen=True, slots=True)
class ProjCache:
    """A projection cache file: whose it is and its rows; ``errors`` lists rows that were refused."""

    path: str
    session_id: str | None
    identity: JSON
    rows: Mapping[str, ProjCacheRow]
    errors: tuple[LineError, ...] = field(default=())


def identity_session_id(identity: JSON) -> str | None:
    """The session id an identity names: the string itself, or an object's ``id`` / ``sessionId``."""
    if isinstance(identity, str) and identity:
        return identity
    if isinstance(identity, dict):
        for key in ("id", "sessionId", "session_id"):
            value = identity.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _sibling_session_id(path: Path) -> str | None:
    for name in SESSION_LOG_NAMES:
        log = path.parent / name
        if log.is_file():
            try:
                return read_header(log).id
            except FormatError:
                return None
    return None


def _row(key: str, value: JSON, path: str) -> ProjCacheRow:
    if not isinstance(value, dict):
        raise FormatError(path, None, f"rows.{key}", f"expected an object, got {type(value).__name__}")
    numbers: dict[str, int] = {}
    for name in ("ver", "seq"):
        number = value.get(name)
        if isinstance(number, bool) or not isinstance(number, int):
            raise FormatError(path, None, f"rows.{key}.{name}", f"expected an integer, got {number!r}")
        numbers[name] = number
    if "val" not in value:
        raise FormatError(path, None, f"rows.{key}.val", "missing")
    return ProjCacheRow(key=key, ver=numbers["ver"], seq=numbers["seq"], val=value["val"])


def read_projcache(path: Path) -> ProjCache:
    """Read one projection cache file; raises :class:`FormatError` when it is not one."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_PROJCACHE_BYTES:
            raise FormatError(
                name, None, "size", f"{size} bytes exceeds the {MAX_PROJCACHE_BYTES}-byte limit"
            )
        with path.open("rb") as fh:
            document = json.load(fh)
    except OSError as error:
        raise FormatError(name, None, "path", f"cannot read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(name, None, "json", str(error)) from None
    if isinstance(document, dict) and isinstance(document.get("record"), dict):
        document = document["record"]
    if (
        not isinstance(document, dict)
        or "identity" not in document
        or not isinstance(document.get("rows"), dict)
    ):
        raise FormatError(name, None, "rows", "not a projection cache: expected {identity, rows: {...}}")
    identity = document["identity"]
    rows: dict[str, ProjCacheRow] = {}
    errors: list[LineError] = []
    for key, value in document["rows"].items():
        try:
            rows[key] = _row(key, value, name)
        except FormatError as error:
            errors.append(error.error)
    session_id = identity_session_id(identity) or _sibling_session_id(path)
    if session_id is None and path.name != PROJCACHE_NAME:
        session_id = path.stem
    return ProjCache(path=name, session_id=session_id, identity=identity, rows=rows, errors=tuple(errors))


def find_projcaches(folder: Path) -> Iterator[Path]:
    """Every ``session_projcache.json`` under ``folder``, in a stable order."""
    yield from sorted(folder.rglob(PROJCACHE_NAME))
