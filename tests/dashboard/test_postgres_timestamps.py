"""PostgreSQL timestamps are read by psycopg's own loader, and read the same instants Django's did."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from django.db import connection

from dashboard.models import Session, Source
from dashboard.storage.postgres_timestamps import use_psycopg_timestamps

pytestmark = pytest.mark.django_db


def _on_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite stores times as text that Django parses itself")


def _loader_name(adapted: object) -> str:
    from psycopg import adapters
    from psycopg.pq import Format

    oid = adapters.types["timestamptz"].oid
    return adapted.adapters.get_loader(oid, Format.TEXT).__name__  # type: ignore[attr-defined]


def test_every_cursor_django_opens_keeps_the_psycopg_loader() -> None:
    _on_postgresql()
    connection.ensure_connection()
    assert _loader_name(connection.connection) == "UtcTimestampLoader"
    with connection.cursor() as cursor:
        # Django registers its own loader on a cursor whose connection's zone differs from it.
        assert _loader_name(cursor.cursor) == "UtcTimestampLoader"


def test_times_read_back_as_the_same_instants_in_utc() -> None:
    _on_postgresql()
    written = [
        datetime(2025, 6, 3, 7, 30, 45, 773000, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(1970, 1, 1, tzinfo=UTC),
    ]
    source = Source.objects.create(name="laptop")
    for index, moment in enumerate(written):
        Session.objects.create(source=source, external_id=f"s{index}", format="dsh", started_at=moment)
    read = list(Session.objects.order_by("external_id").values_list("started_at", flat=True))
    assert read == written
    assert {moment.tzinfo for moment in read} == {UTC}
    with connection.cursor() as cursor:
        cursor.execute("SELECT '2026-12-04 01:02:03.5-08'::timestamptz")
        assert cursor.fetchone() == (datetime(2026, 12, 4, 9, 2, 3, 500000, tzinfo=UTC),)


class _Adapters:
    """A driver connection's adapters map that records the loaders registered on it."""

    def __init__(self) -> None:
        self.registered: list[tuple[str, str]] = []

    def register_loader(self, name: str, loader: type) -> None:
        self.registered.append((name, loader.__name__))


@pytest.mark.parametrize(
    ("vendor", "zone", "registered"),
    [
        ("postgresql", UTC, [("timestamptz", "UtcTimestampLoader")]),
        ("sqlite", UTC, []),
        ("postgresql", timezone(timedelta(hours=1)), []),
        ("postgresql", None, []),
    ],
)
def test_only_a_postgresql_connection_in_utc_gets_the_psycopg_loader(
    vendor: str, zone: object, registered: list[tuple[str, str]]
) -> None:
    adapters = _Adapters()
    stand_in = SimpleNamespace(vendor=vendor, timezone=zone, connection=SimpleNamespace(adapters=adapters))
    use_psycopg_timestamps(sender=None, connection=stand_in)  # type: ignore[arg-type]
    assert adapters.registered == registered
