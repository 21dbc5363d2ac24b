"""A database the previous release migrated moves forward to this one with its rows intact.

The packages were cut anew without touching the app label or the migrations history, so a database
at the last migration of that release takes only the migrations added since.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

PREVIOUS_RELEASE = [("dashboard", "0035_lz4_toast_compression")]
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _latest() -> list[tuple[str, str]]:
    loader = MigrationLoader(connection)
    return [key for key in loader.graph.leaf_nodes() if key[0] == "dashboard"]


@pytest.mark.django_db(transaction=True)
def test_a_database_at_the_previous_release_migrates_forward_keeping_its_rows() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(PREVIOUS_RELEASE)
    apps = executor.loader.project_state(PREVIOUS_RELEASE).apps
    source = apps.get_model("dashboard", "Source").objects.create(name="laptop")
    session = apps.get_model("dashboard", "Session").objects.create(
        source=source, external_id="s", format="dsh"
    )
    request = apps.get_model("dashboard", "Request").objects.create(
        session=session,
        ordinal=0,
        key="msg_0",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        started_at=AT,
        uncached_input_tokens=10,
        cache_read_tokens=1_000,
        cache_write_5m_tokens=200,
        cache_write_1h_tokens=0,
    )
    apps.get_model("dashboard", "RequestAnalysis").objects.create(
        request=request, session=session, wasted_tokens=0, data={"figures": {}}
    )
    apps.get_model("dashboard", "Event").objects.create(session=session, seq=0, type="user/message", time=AT)

    latest = _latest()
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(latest), "nothing to migrate: PREVIOUS_RELEASE is not behind"
    executor.migrate(latest)

    apps = MigrationExecutor(connection).loader.project_state(latest).apps
    stored = apps.get_model("dashboard", "Request").objects.get()
    assert (stored.session.external_id, stored.session.source.name) == ("s", "laptop")
    assert (stored.cache_read_tokens, stored.cache_write_5m_tokens) == (1_000, 200)
    assert apps.get_model("dashboard", "RequestAnalysis").objects.get().request_id == stored.pk
    assert apps.get_model("dashboard", "Event").objects.filter(session=session.pk).count() == 1
    assert not MigrationExecutor(connection).migration_plan(latest)
