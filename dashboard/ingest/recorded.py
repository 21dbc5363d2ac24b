"""Store calls recorded by ``manage.py record``: a batch of one session's calls, appended to its log.

The calls arrive as claude-trace records (see :mod:`projections.formats.anthropic.recorded`) and are stored by
:func:`~dashboard.ingest.files.ingest_session`, the path every claude-trace log takes. A batch may
come twice (the recorder spooled it when the database failed half-way, then replays it): calls
whose key is already stored are skipped, so the replay adds only what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Max

from dashboard.ingest.files import IngestSummary, ingest_session
from dashboard.models import Event, Request, Session, Source
from projections.formats.anthropic.recorded import RecordedCall, recorded_session


def ingest_recorded(
    *, source_name: str, session_id: str, calls: Sequence[RecordedCall], path: str
) -> IngestSummary:
    """Append ``calls`` to the session ``session_id`` of ``source_name``, creating either as needed.

    ``path`` names where the calls came from in any error (the proxy's log). Raises the database's
    errors as they are: the caller keeps the calls and tries again later.
    """
    source, _ = Source.objects.get_or_create(name=source_name)
    session = Session.objects.filter(source=source, external_id=session_id[:200]).first()
    first_seq = 0
    stored_keys: frozenset[str] = frozenset()
    if session is not None:
        last = Event.objects.filter(session=session).aggregate(last=Max("seq"))["last"]
        first_seq = 0 if last is None else last + 1
        stored_keys = frozenset(Request.objects.filter(session=session).values_list("key", flat=True))
    imported = recorded_session(
        external_id=session_id, calls=calls, first_seq=first_seq, skip_keys=stored_keys, path=path
    )
    summary = IngestSummary()
    ingest_session(imported, source=source, summary=summary)
    return summary
