"""A second connection to the PostgreSQL test database: another writer whose locks a test holds."""

from __future__ import annotations

from typing import Any

from django.db import connection


def other_connection() -> Any:
    """A psycopg connection of its own to the database the tests run on (close it when done)."""
    import psycopg

    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"], dbname=settings["NAME"]
    )
