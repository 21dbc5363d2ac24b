"""The test database taken to a migration of an earlier schema, and rows stored through that schema's
models, for the tests of the migrations that follow."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.state import StateApps


def migrated_to(target: list[tuple[str, str]]) -> StateApps:
    """Migrate the test database to ``target``; the models as they stand there."""
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def session_with_a_request(
    apps: StateApps, *, started_at: datetime, cache_write_5m_tokens: int, **session_fields: Any
) -> tuple[Any, Any]:
    """The dsh session ``s`` of the source ``laptop`` and its one Anthropic call ``msg_0`` (10 uncached
    input tokens, 1,000 read), stored through ``apps``: the session and the request."""
    source = apps.get_model("dashboard", "Source").objects.create(name="laptop")
    session = apps.get_model("dashboard", "Session").objects.create(
        source=source, external_id="s", format="dsh", **session_fields
    )
    request = apps.get_model("dashboard", "Request").objects.create(
        session=session,
        ordinal=0,
        key="msg_0",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        started_at=started_at,
        uncached_input_tokens=10,
        cache_read_tokens=1_000,
        cache_write_5m_tokens=cache_write_5m_tokens,
        cache_write_1h_tokens=0,
    )
    return session, request
