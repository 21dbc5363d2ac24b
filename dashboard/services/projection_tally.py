"""What the stored projection rows add up to per key and state version, read off their tallies.

Database triggers append a tally row for every change to the projection rows (migration 0026), so
reading the sums costs a handful of rows rather than a pass over one row per session and key. The
tallies pile up between reads; a read that finds many merges them into one row per key and version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Max, Sum

from dashboard.models import ProjectionTally

MERGE_OVER = 500
"""Tally rows past which a read merges them: a fold appends a few per session it writes."""
DELETE_BATCH = 5_000


@dataclass(frozen=True, slots=True)
class VersionTally:
    """The stored rows of one key and version: how many, their state's bytes, how many stopped, and
    when a fold last wrote one."""

    rows: int
    state_bytes: int
    errors: int
    last_fold: datetime | None


def projection_tallies() -> dict[tuple[str, int], VersionTally]:
    """Per (key, version) that has stored rows, what they add up to; merges the tallies when many."""
    sums = list(
        ProjectionTally.objects.values("key", "ver")
        .annotate(
            parts=Count("id"),
            rows=Sum("rows"),
            state_bytes=Sum("state_bytes"),
            errors=Sum("errors"),
            last_fold=Max("last_fold"),
        )
        .order_by()
    )
    if sum(row["parts"] for row in sums) > MERGE_OVER:
        projection_tallies_merge()
    return {
        (row["key"], row["ver"]): VersionTally(
            rows=row["rows"],
            state_bytes=row["state_bytes"] or 0,
            errors=row["errors"] or 0,
            last_fold=row["last_fold"],
        )
        for row in sums
        if row["rows"]
    }


def projection_tallies_merge() -> int:
    """Replace the tallies with one row per key and version; the number of rows replaced.

    A tally a fold appends meanwhile stays for the next merge, and two merges at once never count
    a row twice. On PostgreSQL one statement deletes the rows it sees and inserts their sums; the
    second of two merges waits for the first, then skips the rows it deleted.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(MERGE_SQL)
            (merged,) = cursor.fetchone()
        return int(merged)
    return projection_tallies_merge_read()


MERGE_SQL = """
    WITH gone AS (
        DELETE FROM dashboard_projectiontally RETURNING key, ver, rows, state_bytes, errors, last_fold
    ), kept AS (
        INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
        SELECT key, ver, sum(rows), sum(state_bytes), sum(errors), max(last_fold) FROM gone
        GROUP BY key, ver HAVING sum(rows) <> 0 OR sum(state_bytes) <> 0 OR sum(errors) <> 0
        RETURNING id
    )
    SELECT count(*) FROM gone
"""


def projection_tallies_merge_read() -> int:
    """:func:`projection_tallies_merge` through the ORM, where one statement cannot both delete and
    insert (SQLite): the rows read are locked and exactly those deleted, and if another merge took
    some meanwhile, nothing is written (on SQLite, writers take turns, so it cannot)."""
    with transaction.atomic():
        parts = list(
            ProjectionTally.objects.select_for_update()
            .order_by("id")
            .values_list("id", "key", "ver", "rows", "state_bytes", "errors", "last_fold")
        )
        merged: dict[tuple[str, int], ProjectionTally] = {}
        for _, key, ver, rows, state_bytes, errors, last_fold in parts:
            into = merged.setdefault((key, ver), ProjectionTally(key=key, ver=ver))
            into.rows += rows
            into.state_bytes += state_bytes
            into.errors += errors
            if last_fold is not None and (into.last_fold is None or last_fold > into.last_fold):
                into.last_fold = last_fold
        ids = [part[0] for part in parts]
        deleted = 0
        for start in range(0, len(ids), DELETE_BATCH):
            deleted += ProjectionTally.objects.filter(pk__in=ids[start : start + DELETE_BATCH]).delete()[0]
        if deleted != len(ids):
            transaction.set_rollback(True)  # another merge took some: leave them all to the next read
            return 0
        ProjectionTally.objects.bulk_create(
            tally for tally in merged.values() if tally.rows or tally.state_bytes or tally.errors
        )
    return len(ids)
