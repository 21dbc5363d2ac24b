"""On PostgreSQL the large JSON columns are compressed with lz4, where the server offers it."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from dashboard.models import Event, Session, Source

pytestmark = pytest.mark.django_db

migration = importlib.import_module("dashboard.migrations.0035_lz4_toast_compression")


def postgresql_with_lz4() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("TOAST compression is PostgreSQL's")
    with connection.cursor() as cursor:
        if not migration._lz4_offered(cursor):
            pytest.skip("this server was built without lz4")


def test_every_large_column_is_set_to_lz4() -> None:
    postgresql_with_lz4()
    with connection.cursor() as cursor:
        for table, columns in migration.COLUMNS.items():
            cursor.execute(
                "SELECT attname, attcompression FROM pg_attribute"
                " WHERE attrelid = %s::regclass AND attname = ANY(%s)",
                [table, list(columns)],
            )
            assert dict(cursor.fetchall()) == dict.fromkeys(columns, "l"), table


def test_a_large_event_is_stored_compressed_with_lz4() -> None:
    postgresql_with_lz4()
    session = Session.objects.create(source=Source.objects.create(name="laptop"), external_id="s")
    event = Event.objects.create(
        session=session, seq=0, type="tool/result", data={"content": "output line\n" * 2000}
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(data) FROM dashboard_event WHERE id = %s", [event.pk])
        assert cursor.fetchone() == ("lz4",)
    assert Event.objects.get(pk=event.pk).data == {"content": "output line\n" * 2000}
