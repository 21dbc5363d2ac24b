from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dashboard.ingest.event_writer import EventWriter
from dashboard.models import Event, Session, Source
from projections.normalized import EventRecord

pytestmark = pytest.mark.django_db


def test_rows_written_in_batches_read_back_exactly_through_the_orm() -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="s", format="dsh"
    )
    records = [
        EventRecord(
            seq=0,
            type="system/message",
            time=datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
            data={"message": {"role": "system", "content": 'Ünïcode ✓ 𝄞 "quoted"'}},
            surface_op="append",
        ),
        EventRecord(
            seq=1,
            type="user/message",
            time=None,
            data={"content": [], "n": 1.5},
            surface_op={"op": "replace", "start": 0, "end": 0},
            source_event_seqs=(0,),
        ),
        EventRecord(seq=2, type="plugin/x", time=None, data={}, ignorable=True),
        # An integer beyond 64 bits, as a log may hold one, is stored whole.
        EventRecord(seq=3, type="plugin/y", time=None, data={"id": 2**70, "x": -0.0}),
    ]
    writer = EventWriter(session.pk, batch_size=2)
    for record in records:
        writer.add(record)
    assert writer.flush() == 4

    rows = list(Event.objects.filter(session=session).order_by("seq"))
    assert [
        (r.seq, r.type, r.time, r.data, r.surface_op, r.source_event_seqs, r.ignorable) for r in rows
    ] == [
        (0, "system/message", records[0].time, dict(records[0].data), "append", None, False),
        (
            1,
            "user/message",
            None,
            {"content": [], "n": 1.5},
            {"op": "replace", "start": 0, "end": 0},
            [0],
            False,
        ),
        (2, "plugin/x", None, {}, None, None, True),
        (3, "plugin/y", None, {"id": 2**70, "x": -0.0}, None, None, False),
    ]
    assert Event.objects.filter(data__message__role="system").count() == 1
