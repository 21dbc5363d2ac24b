"""A stored session, or a log file, as the what-if engine takes it: requests, boundary events,
where the bodies are and, for a stored session, the lineages its analysis decided."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from dashboard.analysis.stored_requests import StoredBodies, stored_record_usage_only
from dashboard.analysis.stored_sessions import BODY_FIELDS, analysed_events
from dashboard.models import Request, RequestAnalysis, Session
from projections.cache.session_analysis import start_order
from projections.cache.transcript_analysis import is_boundary
from projections.cache.whatif.replay import ReplayBodies
from projections.formats import read_sessions
from projections.normalized import EventRecord, LineError, RequestRecord


@dataclass(slots=True)
class WhatIfInputs:
    """One session as :func:`~projections.cache.whatif.session.whatif_session` takes it."""

    name: str
    """The session's external id."""
    records: list[RequestRecord]
    events: list[EventRecord]
    bodies: ReplayBodies | None = None
    """``None``: the records carry their bodies."""
    parents: Mapping[str, str | None] | None = None
    errors: tuple[LineError, ...] = ()
    """Bad lines met reading a log file."""


def stored_inputs(session: Session) -> WhatIfInputs:
    """A stored session's requests (without their units: :class:`StoredBodies` reads those a batch
    at a time), its boundary events, and the request each one continues where its analysis said.

    Three queries, and the units and blocks as the replay reaches them.
    """
    rows = list(Request.objects.filter(session=session).order_by("ordinal").defer(*BODY_FIELDS))
    records = [stored_record_usage_only(row) for row in rows]
    order = [record.key for record in sorted(records, key=start_order)]
    return WhatIfInputs(
        name=session.external_id,
        records=records,
        events=analysed_events(session),
        bodies=StoredBodies(rows, order),
        parents=_stored_parents(session, rows),
    )


def _stored_parents(session: Session, rows: list[Request]) -> dict[str, str | None] | None:
    """The request each request with a body continues, as the stored analysis decided; ``None``
    when some such request has no analysis yet (the replay then decides the lineages itself)."""
    analysed = dict(
        RequestAnalysis.objects.filter(session=session).values_list("request__key", "data__previous")
    )
    parents: dict[str, str | None] = {}
    for row in rows:
        if not row.has_body:
            continue
        if row.key not in analysed:
            return None
        previous = analysed[row.key]
        parents[row.key] = previous.get("key") if isinstance(previous, dict) else None
    return parents


def file_inputs(path: Path, *, format: str | None = None) -> list[WhatIfInputs]:
    """Every session of a log file (or folder) as read, with its bodies, without storing anything.

    A repeated request key is one request, as ingest stores it; ordinals count the session's
    requests in file order.
    """
    sessions: list[WhatIfInputs] = []
    for imported in read_sessions(path, format=format):
        records: list[RequestRecord] = []
        events: list[EventRecord] = []
        errors: list[LineError] = []
        keys: set[str] = set()
        for item in imported.items:
            if isinstance(item, RequestRecord):
                if item.key not in keys:
                    keys.add(item.key)
                    records.append(replace(item, ordinal=len(records)))
            elif isinstance(item, EventRecord):
                if is_boundary(item):
                    events.append(item)
            elif isinstance(item, LineError):
                errors.append(item)
        if imported.fatal:
            errors.append(LineError(imported.path, None, "session", imported.fatal))
        sessions.append(WhatIfInputs(imported.external_id, records, events, errors=tuple(errors)))
    return sessions
