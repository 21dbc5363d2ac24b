"""Fast batched inserts of log events.

Events are most of what an ingest writes (millions of rows at fleet scale), and building a model
instance per row costs more than the insert itself. This writer prepares each row's values once,
in the shape the database stores, and sends them with one COPY per batch on PostgreSQL
(:func:`~dashboard.storage.copy_rows.copy_in`), one ``executemany`` elsewhere. It writes
exactly the columns of :class:`dashboard.models.Event`, which the tests compare row for row with
what the ORM reads back.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import orjson
from django.db import connection

from dashboard.models import Event
from dashboard.storage.copy_rows import copy_in
from projections.normalized import EventRecord
from projections.wall_clock import WALL_CLOCK_FROM

_COLUMNS = ("session_id", "seq", "type", "time", "data", "surface_op", "source_event_seqs", "ignorable")


def _encode(value: Any) -> str | None:
    if value is None:
        return None
    try:
        # orjson writes the same compact UTF-8 text several times faster; it refuses integers
        # beyond 64 bits, which a log may hold, and those go through the standard encoder.
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class EventWriter:
    """Collects one session's new events and inserts them in batches."""

    def __init__(self, session_id: int, *, batch_size: int = 2000) -> None:
        self.session_id = session_id
        self.batch_size = batch_size
        self.rows: list[tuple[Any, ...]] = []
        self.written = 0
        self.earliest: datetime | None = None
        self.latest: datetime | None = None
        json_slot = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
        slots = ["%s", "%s", "%s", "%s", json_slot, json_slot, json_slot, "%s"]
        table = connection.ops.quote_name(Event._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(c) for c in _COLUMNS)
        # Only fixed identifiers are formatted in; every value goes through a parameter.
        self.sql = f"INSERT INTO {table} ({columns}) VALUES ({', '.join(slots)})"  # noqa: S608

    @property
    def time_range(self) -> tuple[datetime, datetime] | None:
        """The earliest and latest wall-clock time among the events written, when any had one."""
        if self.earliest is None or self.latest is None:
            return None
        return self.earliest, self.latest

    def add(self, event: EventRecord) -> None:
        # A test clock's instant (see WALL_CLOCK_FROM) stays on its event but dates no session.
        if event.time is not None and event.time >= WALL_CLOCK_FROM:
            if self.earliest is None or event.time < self.earliest:
                self.earliest = event.time
            if self.latest is None or event.time > self.latest:
                self.latest = event.time
        seqs = list(event.source_event_seqs) if event.source_event_seqs is not None else None
        self.rows.append(
            (
                self.session_id,
                event.seq,
                event.type[:80],
                connection.ops.adapt_datetimefield_value(event.time),
                _encode(dict(event.data)),
                _encode(event.surface_op),
                _encode(seqs),
                event.ignorable,
            )
        )
        if len(self.rows) >= self.batch_size:
            self.flush()

    def flush(self) -> int:
        """Insert what is queued; return how many rows this writer has inserted in all."""
        if self.rows:
            if connection.vendor == "postgresql":
                copy_in(Event._meta.db_table, _COLUMNS, self.rows)  # one stream per batch
            else:
                with connection.cursor() as cursor:
                    cursor.executemany(self.sql, self.rows)
            self.written += len(self.rows)
            self.rows.clear()
        return self.written
