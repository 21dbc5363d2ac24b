"""What an ingest job has stored, counted on its row in the transaction that stores it.

A job that is retried (a deadlock, a database restart) or taken over (its worker died) runs again
from the start, and its later attempt finds its earlier attempts' rows already stored. Counted at
its end, such a job said "0 added, all duplicates" of a batch it stored whole, and a killed one
said 0 events of thousands it had committed. Counted as each transaction commits, the row always
says what the job stored, whatever became of the process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db.models import F

from dashboard.models import IngestJob

TALLIED = ("sessions_added", "sessions_updated", "events_added", "requests_added")
"""The counts of rows a job wrote: exact across attempts, since a row is written once."""


def job_tally_add(*, job_id: int, counts: Mapping[str, int], session_ids: Iterable[int] = ()) -> None:
    """Add ``counts`` (of :data:`TALLIED`) and the sessions they touched to job ``job_id``, in the
    caller's transaction, so they commit, or roll back, with the rows they count."""
    added = {name: F(name) + counts[name] for name in TALLIED if counts.get(name)}
    if added:
        IngestJob.objects.filter(pk=job_id).update(**added)
    ids = list(session_ids)
    if ids:
        IngestJob.sessions.through.objects.bulk_create(
            [IngestJob.sessions.through(ingestjob_id=job_id, session_id=pk) for pk in ids],
            ignore_conflicts=True,
        )


def job_tally_read(*, job_id: int) -> dict[str, int]:
    """What job ``job_id``'s earlier attempts committed (all zero for a job's first)."""
    return dict(IngestJob.objects.filter(pk=job_id).values(*TALLIED).get())
