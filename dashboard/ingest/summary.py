"""What one ingest did: counts, the lines it could not store, and the sessions it touched."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from projections.normalized import LineError, LineNotice

if TYPE_CHECKING:
    from dashboard.ingest.incremental.reading import FileCounts


@dataclass
class IngestSummary:
    """What one ingest did; printed by the command and stored on the job."""

    sessions_added: int = 0
    sessions_updated: int = 0
    sessions_unchanged: int = 0
    events_added: int = 0
    requests_added: int = 0
    requests_completed: int = 0
    """Stored requests whose call was still being written then, given its final output count now."""
    duplicate_events: int = 0
    """Events skipped because the stored log already holds their seq with the same type."""
    duplicate_requests: int = 0
    """Requests skipped because their session already holds their key."""
    errors: list[LineError] = field(default_factory=list)
    """Lines, files or sessions that were not stored."""
    notices: list[LineNotice] = field(default_factory=list)
    """Lines stored after a change that made them storable (a NUL replaced): listed, not errors."""
    session_ids: list[int] = field(default_factory=list)
    changed_session_ids: list[int] = field(default_factory=list)
    """Sessions this ingest added or updated: what its job links to."""
    followups_pending: list[int] = field(default_factory=list)
    """Sessions stored whose folds and analyses could not be enqueued (the broker was down)."""
    committed: dict[str, int] = field(default_factory=dict)
    """The added counts as of the last commit (:meth:`note_committed`): what is stored for sure."""
    files: FileCounts | None = None
    """For an incremental ingest, the files it skipped, took up or read whole."""
    elsewhere: list[tuple[str, int, str]] = field(default_factory=list)
    """``(external id, session id, source)`` of each log read that another source already holds:
    not stored again, and counted in no total here."""

    @property
    def sessions(self) -> int:
        return self.sessions_added + self.sessions_updated + self.sessions_unchanged

    @property
    def duplicates(self) -> int:
        """Events and requests skipped as already stored, together."""
        return self.duplicate_events + self.duplicate_requests

    def as_dict(self) -> dict[str, int]:
        return {
            "sessions": self.sessions,
            "sessions_added": self.sessions_added,
            "sessions_updated": self.sessions_updated,
            "sessions_unchanged": self.sessions_unchanged,
            "events": self.events_added,
            "requests": self.requests_added,
            "duplicates": self.duplicates,
            "duplicate_events": self.duplicate_events,
            "duplicate_requests": self.duplicate_requests,
            "errors": len(self.errors),
            "notices": len(self.notices),
            "sessions_elsewhere": len(self.elsewhere),
        }

    def added_counts(self) -> dict[str, int]:
        """The counts of rows written: sessions added and updated, events and requests added."""
        return {
            "sessions_added": self.sessions_added,
            "sessions_updated": self.sessions_updated,
            "events_added": self.events_added,
            "requests_added": self.requests_added,
        }

    def note_committed(self) -> None:
        """Record that everything counted so far is committed."""
        self.committed = self.added_counts()

    def stored_text(self) -> str:
        """What was committed, in words: "12 sessions (10 new, 2 updated), 4,000 events, 120 requests"."""
        done = self.committed or dict.fromkeys(self.added_counts(), 0)
        sessions = done["sessions_added"] + done["sessions_updated"]
        return (
            f"{sessions:,} sessions ({done['sessions_added']:,} new, {done['sessions_updated']:,} updated), "
            f"{done['events_added']:,} events, {done['requests_added']:,} requests"
        )

    def include_earlier(self, earlier: dict[str, int]) -> None:
        """Count, with this attempt of a job, what its earlier attempts committed (``earlier``, as
        :meth:`added_counts` gives it).

        This attempt found those rows stored and counted them as duplicates (its sessions as
        unchanged): they were the job's own, so they move back to what it added.
        """
        self.duplicate_events = max(0, self.duplicate_events - earlier["events_added"])
        self.duplicate_requests = max(0, self.duplicate_requests - earlier["requests_added"])
        stored_before = earlier["sessions_added"] + earlier["sessions_updated"]
        self.sessions_unchanged = max(0, self.sessions_unchanged - stored_before)
        self.sessions_added += earlier["sessions_added"]
        self.sessions_updated += earlier["sessions_updated"]
        self.events_added += earlier["events_added"]
        self.requests_added += earlier["requests_added"]
