"""Telling a database that is gone from one that refused a statement, and naming it for a person.

Django raises :class:`~django.db.OperationalError` both for a deadlock (run the transaction again)
and for a server that stopped or cannot be reached (nothing more can be stored until it is back).
The second gets one clear line at the edge (a 503 from the API, one line from the command) instead
of a traceback; the first is retried (:mod:`dashboard.storage.db_retry`).
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError, connection

UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
"""admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections."""
CONNECTION_CLASS = "08"
"""SQLSTATE class of connection exceptions."""
SQLITE_UNAVAILABLE = ("unable to open database file", "disk i/o error")


class DatabaseUnavailable(OperationalError):
    """The database stopped answering during work that had stored ``stored`` before it.

    An :class:`~django.db.OperationalError` still, so a task retries it as it retries any database
    hiccup; the command and the API turn it into one line.
    """

    def __init__(self, database: str, reason: str, stored: str) -> None:
        self.database = database
        self.reason = reason
        self.stored = stored
        super().__init__(
            f"the database ({database}) is unavailable ({reason}); stored before it stopped: {stored}"
        )


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot be reached or has stopped, not that it refused
    one statement (a deadlock, a lock timeout, a constraint)."""
    if isinstance(error, InterfaceError):
        return True  # the connection was already closed under us
    if not isinstance(error, OperationalError):
        return False
    cause = error.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    if connection.vendor == "sqlite":
        return str(error).lower().startswith(SQLITE_UNAVAILABLE)
    if sqlstate is None:
        # psycopg raises its bare OperationalError, with no SQLSTATE, when it cannot connect or the
        # server closed the connection; a statement the server refused always carries one.
        return True
    return sqlstate in UNAVAILABLE_SQLSTATES or sqlstate.startswith(CONNECTION_CLASS)


def database_label() -> str:
    """The default database as a person knows it: ``PostgreSQL cachescope at db:5432``."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"SQLite {settings['NAME']}"
    where = f"{settings.get('HOST') or 'localhost'}:{settings.get('PORT') or 5432}"
    return f"{connection.display_name} {settings['NAME']} at {where}"


def unavailable_reason(error: BaseException) -> str:
    """Why, in the driver's words: the end of its first line (``Connection refused``, ``server
    closed the connection unexpectedly``, ``terminating connection due to administrator command``)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0].rsplit(": ", 1)[-1].strip() if lines else type(error).__name__
