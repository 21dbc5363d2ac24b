"""A host's own projection rows (dsh ``session_projcache.json``) checked against our fold.

For the stored session the file names, every row whose state version we define is compared with
our fold of the stored log under that version at the row's seq: the row's ``val`` is the host's
view (or, from a host that stores state, the serialized state), so either equal is agreement. The
outcome is kept per key and version on the session (shown on its page); a disagreement is also a
``projection-mismatch`` warning, once per key, version and seq.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from dashboard.analysis.session_warnings import session_refresh_warning_count, session_warn
from dashboard.models import ProjcacheCheck, Session, Source, Warning
from dashboard.refold.folds import session_records
from dashboard.refold.lockstep import Track, drain, fold_tracks
from projections.folds.fold import FoldStep
from projections.folds.registry import UnknownProjection, get_projection
from projections.formats import ProjCacheRow, read_projcache
from projections.normalized import JSON, EventRecord, FormatError

Step = tuple[EventRecord, list[FoldStep[Any, Any] | None]]


@dataclass
class ProjcacheResult:
    """What one projection cache file told us."""

    path: str
    session_id: int | None = None
    """The stored session it belongs to; ``None`` when no stored session matches its identity."""
    agree: list[str] = field(default_factory=list)
    mismatch: list[str] = field(default_factory=list)
    not_comparable: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Rows of a key or state version we do not define."""
    error: str = ""


def projcache_ingest(path: Path, *, source_name: str) -> ProjcacheResult:
    """Check the projection cache at ``path`` against the session of source ``source_name`` it names.

    Raises nothing for a bad file: the reason is in ``error``, so an ingest of many files goes on.
    """
    result = ProjcacheResult(path=str(path))
    try:
        cache = read_projcache(path)
    except FormatError as error:
        result.error = str(error)
        return result
    if cache.session_id is None:
        result.error = f"{path}: the identity names no session"
        return result
    source = Source.objects.filter(name=source_name).first()
    session = Session.objects.filter(source=source, external_id=cache.session_id).first() if source else None
    if session is None:
        result.error = f"{path}: no stored session {cache.session_id!r} in source {source_name!r}"
        return result
    result.session_id = session.pk
    checks = [_check(session, row, str(path)) for row in cache.rows.values()]
    with transaction.atomic():
        for row, check in zip(cache.rows.values(), checks, strict=True):
            label = f"{row.key} v{row.ver} seq {row.seq}"
            if check is None:
                result.skipped.append(label)
                continue
            ProjcacheCheck.objects.update_or_create(session=session, key=row.key, ver=row.ver, defaults=check)
            {
                ProjcacheCheck.Status.AGREE: result.agree,
                ProjcacheCheck.Status.MISMATCH: result.mismatch,
                ProjcacheCheck.Status.NOT_COMPARABLE: result.not_comparable,
            }[ProjcacheCheck.Status(str(check["status"]))].append(label)
            if check["status"] == ProjcacheCheck.Status.MISMATCH:
                session_warn(
                    session_id=session.pk,
                    kind=Warning.Kind.PROJECTION_MISMATCH,
                    place=f"projcache {label}",
                    message=f"{session.external_id}: the host's {label} row {check['detail']}",
                    seq=row.seq,
                )
        if result.mismatch:
            session_refresh_warning_count(session_id=session.pk)
    return result


def _check(session: Session, row: ProjCacheRow, path: str) -> dict[str, object] | None:
    try:
        projection = get_projection(row.key, row.ver)
    except UnknownProjection:
        return None
    base: dict[str, object] = {"seq": row.seq, "theirs": row.val, "source_path": path[-1000:]}
    if session.unfoldable:
        return base | {
            "status": ProjcacheCheck.Status.NOT_COMPARABLE,
            "ours": None,
            "detail": f"our fold cannot run: {session.unfoldable}",
        }
    track = Track.start(projection)
    drain(_until(fold_tracks([track], session_records(session_id=session.pk)), row.seq))
    if track.error is not None and (track.seq is None or track.seq < row.seq):
        return base | {
            "status": ProjcacheCheck.Status.NOT_COMPARABLE,
            "ours": None,
            "detail": f"our fold stopped before seq {row.seq}: {track.error}",
        }
    if track.seq != row.seq:
        last = "no events" if track.seq is None else f"seq {track.seq}"
        return base | {
            "status": ProjcacheCheck.Status.NOT_COMPARABLE,
            "ours": None,
            "detail": f"the stored log ends at {last}, before the row's seq {row.seq}",
        }
    ours: JSON = projection.view_json(track.view)
    if agrees(row.val, ours) or row.val == projection.serialize(track.state):
        return base | {"status": ProjcacheCheck.Status.AGREE, "ours": ours, "detail": ""}
    return base | {
        "status": ProjcacheCheck.Status.MISMATCH,
        "ours": ours,
        "detail": f"says {row.val} but our fold gives {ours}",
    }


def agrees(theirs: JSON, ours: JSON) -> bool:
    """Whether the host's row says what our view says: every figure the host keeps must be equal;
    figures the host does not keep (ours may carry more, such as a report count) are not compared."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return all(key in ours and ours[key] == value for key, value in theirs.items())
    return bool(theirs == ours)


def _until(steps: Generator[Step, None, None], seq: int) -> Iterator[Step]:
    """Stop a lockstep fold once it has folded event ``seq``."""
    for event, folded in steps:
        yield event, folded
        if event.seq >= seq:
            steps.close()
            return
