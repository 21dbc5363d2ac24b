"""Inserting many new rows of one model: PostgreSQL's COPY there, the ORM's bulk insert elsewhere.

On PostgreSQL Django's bulk insert sends each column as one array parameter (``UNNEST``), and
psycopg quotes the elements of a text array one by one in Python, escaping every quote of every
JSON document: for rows that carry one (an analysis's findings, a provider's raw usage) that cost
more than the insert itself, 46 ms of the Claude Code benchmark's 724 analyses alone. COPY sends
the same values as one stream that psycopg formats in C.

The rows get no primary key back, and a conflict is an error as it is for ``bulk_create`` without
``ignore_conflicts``: this is for rows the caller knows are new and does not read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Model

BATCH_SIZE = 2000


def insert_rows(model: type[Model], rows: Sequence[Model], *, batch_size: int = BATCH_SIZE) -> None:
    """Insert ``rows``, new instances of ``model``, in the caller's transaction."""
    if connection.vendor != "postgresql" or len(rows) < 2:
        model._default_manager.bulk_create(rows, batch_size=batch_size)
        return
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    copy_in(model._meta.db_table, [field.column for field in fields], (_values(row, fields) for row in rows))


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


def _values(row: Model, fields: list[Any]) -> list[Any]:
    # As a save would store them: pre_save fills automatic timestamps, get_db_prep_save adapts the
    # value (a JSON document to psycopg's Jsonb) for this database.
    return [field.get_db_prep_save(field.pre_save(row, True), connection=connection) for field in fields]
