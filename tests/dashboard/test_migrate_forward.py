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

from tests.dashboard.migration_states import migrated_to, session_with_a_request

PREVIOUS_RELEASE = [("dashboard", "0035_lz4_toast_compression")]
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _latest() -> list[tuple[str, str]]:
    loader = MigrationLoader(connection)
    return [key for key in loader.graph.leaf_nodes() if key[0] == "dashboard"]


@pytest.mark.django_db(transaction=True)
def test_a_database_at_the_previous_release_migrates_forward_keeping_its_rows() -> None:
    apps = migrated_to(PREVIOUS_RELEASE)
    session, request = session_with_a_request(apps, started_at=AT, cache_write_5m_tokens=200)
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


@pytest.mark.django_db(transaction=True)
def test_two_unfinished_runs_of_one_comparison_migrate_to_one_and_a_superseded_one() -> None:
    before = [("dashboard", "0036_request_figures_help_text")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    fold_run = executor.loader.project_state(before).apps.get_model("dashboard", "FoldRun")
    comparison = {"key": "contextBreakdown", "from_version": 7, "to_version": 8}
    kept = fold_run.objects.create(**comparison, status="running").pk
    later = fold_run.objects.create(**comparison, status="queued").pk
    chosen = fold_run.objects.create(**comparison, status="queued", session_ids=[1]).pk

    latest = _latest()
    MigrationExecutor(connection).migrate(latest)

    fold_run = (
        MigrationExecutor(connection).loader.project_state(latest).apps.get_model("dashboard", "FoldRun")
    )
    statuses = dict(fold_run.objects.values_list("pk", "status"))
    assert statuses == {kept: "running", later: "failed", chosen: "queued"}
    assert fold_run.objects.get(pk=later).message.startswith(f"Superseded by re-fold #{kept}")
