"""The distinct values of one indexed column, read by hopping along its index.

``SELECT DISTINCT model FROM dashboard_request`` reads all 1.3 million requests of a fleet to find a
dozen models, and the list filters ask for them on every page. PostgreSQL does not skip through an
index on its own, but a recursive query can: each step asks the index for the first value past the
last one found, so the cost is one index probe per distinct value. Other databases (SQLite, a single
user's file) get the plain ``DISTINCT``.
"""

from __future__ import annotations

from django.db import connections, models


def distinct_values(model: type[models.Model], field_name: str) -> list[str]:
    """Every non-empty value of the text column ``field_name``, in the database's order; the column
    should lead an index, or PostgreSQL reads the table once per value."""
    manager = model._default_manager
    connection = connections[manager.db]
    if connection.vendor != "postgresql":
        found = manager.exclude(**{field_name: ""}).order_by(field_name).values_list(field_name, flat=True)
        return list(found.distinct())
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(model._meta.get_field(field_name).column)
    sql = f"""
        WITH RECURSIVE found(value) AS (
            (SELECT {column} FROM {table} WHERE {column} > '' ORDER BY {column} LIMIT 1)
            UNION ALL
            SELECT (SELECT {column} FROM {table} WHERE {column} > found.value ORDER BY {column} LIMIT 1)
            FROM found WHERE found.value IS NOT NULL
        )
        SELECT value FROM found WHERE value IS NOT NULL
    """  # noqa: S608 - the names are the model's own, quoted; no value comes from a request
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [value for (value,) in cursor.fetchall()]
