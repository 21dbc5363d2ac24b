"""What one ingest did: counts, the lines it could not store, and the sessions it touched."""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.normalized import LineError, LineNotice


@dataclass
class IngestSummary:
    """What one ingest did; printed by the command and stored on the job."""

    sessions_added: int = 0
    sessions_updated: int = 0
    sessions_unchanged: int = 0
    events_added: int = 0
    requests_added: int = 0
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
