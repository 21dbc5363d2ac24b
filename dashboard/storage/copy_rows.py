"""Inserting many new rows of one model: PostgreSQL's COPY there, one prepared INSERT on SQLite.

On PostgreSQL Django's bulk insert sends each column as one array parameter (``UNNEST``), and
psycopg quotes the elements of a text array one by one in Python, escaping every quote of every
JSON document: for rows that carry one (an analysis's findings, a provider's raw usage) that cost
more than the insert itself, 46 ms of the Claude Code benchmark's 724 analyses alone. COPY sends
the same values as one stream that psycopg formats in C.

On SQLite the ORM's bulk insert builds one statement of a few hundred rows' placeholders at a time
(SQLite caps a statement's parameters) and adapts each value through its compiler: a third of the
cost of storing a first ingest's requests. One INSERT, prepared once and run for every row
(``executemany``), stores the same values for the cost of adapting them.

The rows get no primary key back, and a conflict is an error as it is for ``bulk_create`` without
``ignore_conflicts``: this is for rows the caller knows are new and does not read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models
from django.db.models import Model

BATCH_SIZE = 2000


def insert_rows(model: type[Model], rows: Sequence[Model], *, batch_size: int = BATCH_SIZE) -> None:
    """Insert ``rows``, new instances of ``model``, in the caller's transaction."""
    if len(rows) < 2 or connection.vendor not in ("postgresql", "sqlite"):
        model._default_manager.bulk_create(rows, batch_size=batch_size)
        return
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = [field.column for field in fields]
    values = (_values(row, fields) for row in rows)
    if connection.vendor == "postgresql":
        copy_in(model._meta.db_table, columns, values)
    else:
        insert_many(model._meta.db_table, columns, values)


def insert_many(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """One INSERT of ``rows`` into ``table``, prepared once and run for each row, in the caller's
    transaction; errors become Django's (IntegrityError, DataError), as for ``copy_in``."""
    quote = connection.ops.quote_name
    # Only identifiers are formatted in; every value is a parameter.
    names = ", ".join(quote(column) for column in columns)
    placeholders = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {quote(table)} ({names}) VALUES ({placeholders})"  # noqa: S608 (identifiers only)
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def copy_in(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """PostgreSQL's COPY of ``rows``, values in the order of ``columns``, into ``table``, in the
    caller's transaction: one stream instead of one statement a row or an array a column.

    Django's wrapper turns the driver's errors into its own (IntegrityError, DataError), which the
    ingest catches to refuse one session rather than stop.
    """
    quote = connection.ops.quote_name
    # Only identifiers are formatted in; every value goes through the COPY stream.
    sql = f"COPY {quote(table)} ({', '.join(quote(column) for column in columns)}) FROM STDIN"
    with connection.cursor() as cursor, connection.wrap_database_errors, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


_PLAIN: dict[type[models.Field[Any, Any]], type] = {
    models.BigIntegerField: int,
    models.BooleanField: bool,
    models.CharField: str,
    models.FloatField: float,
    models.IntegerField: int,
    models.PositiveBigIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.SmallIntegerField: int,
    models.TextField: str,
}
"""Fields whose value of exactly this type is stored as it is: the adaptation a save would make
leaves it unchanged, and skipping it for these columns halves the cost of preparing a row."""


def _values(row: Model, fields: list[Any]) -> list[Any]:
    # As a save would store them: pre_save fills automatic timestamps, get_db_prep_save adapts the
    # value (a JSON document to psycopg's Jsonb) for this database; a plain value of a plain field
    # (and a foreign key's id) goes as it is.
    values = row.__dict__
    prepared = []
    for field in fields:
        plain = _PLAIN.get(type(field))
        if plain is not None or field.is_relation:
            value = values.get(field.attname)
            if value is None or type(value) is (plain or int):
                prepared.append(value)
                continue
        prepared.append(field.get_db_prep_save(field.pre_save(row, True), connection=connection))
    return prepared
