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
    a row twice. On PostgreSQL one statement deletes the rows it sees and inserts their sums (the
    second of two merges waits for the first, then skips the rows it deleted); on SQLite, whose
    writers take turns, the sums of the rows up to the last id are written, then those rows deleted.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(MERGE_POSTGRESQL)
            (merged,) = cursor.fetchone()
            return int(merged)
        cursor.execute("SELECT max(id), count(*) FROM dashboard_projectiontally")
        last, merged = cursor.fetchone()
        if last is not None:
            cursor.execute(MERGE_UP_TO, [last])
            cursor.execute("DELETE FROM dashboard_projectiontally WHERE id <= %s", [last])
        return int(merged)


MERGE_POSTGRESQL = """
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
MERGE_UP_TO = """
    INSERT INTO dashboard_projectiontally (key, ver, rows, state_bytes, errors, last_fold)
    SELECT key, ver, sum(rows), sum(state_bytes), sum(errors), max(last_fold)
    FROM dashboard_projectiontally WHERE id <= %s
    GROUP BY key, ver HAVING sum(rows) <> 0 OR sum(state_bytes) <> 0 OR sum(errors) <> 0
"""
