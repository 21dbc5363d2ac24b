"""The migration that moves stored host log lines out of the warnings loses none of them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dashboard.analysis.warnings import warning_stakes_refresh
from dashboard.costs.pricing import prices_load
from dashboard.models import Warning
from tests.dashboard.migration_states import migrated_to, session_with_a_request

BEFORE = [("dashboard", "0020_session_labels")]
AFTER = [("dashboard", "0021_host_notes_warning_stakes")]
AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.mark.django_db(transaction=True)
def test_host_log_warnings_become_host_notes_and_the_rest_are_dated_then_staked_by_the_refresh() -> None:
    apps = migrated_to(BEFORE)
    session, request = session_with_a_request(apps, started_at=AT, cache_write_5m_tokens=0, warning_count=3)
    apps.get_model("dashboard", "RequestAnalysis").objects.create(
        request=request, session=session, data={"figures": {"predicted_read": 11_000}}
    )
    event = apps.get_model("dashboard", "Event")
    logged = {"level": "info", "line": "x"}
    event.objects.create(session=session, seq=7, type="cache/log", time=AT, data=logged)
    event.objects.create(session=session, seq=9, type="user/message", time=AT, data={})
    warning = apps.get_model("dashboard", "Warning").objects
    line = "[kv-unified] msg_0: reused 1000 tokens, 2 markers kept"
    warning.create(session=session, request=request, kind="host-log", place="seq 7", message=line)
    warning.create(session=session, request=request, kind="unexplained-miss", place="main", message="miss")
    warning.create(session=session, kind="fold-error", place="contextBreakdown v8 seq 9", message="stopped")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    note = apps.get_model("dashboard", "HostNote").objects.get()
    assert (note.seq, note.line, note.level, note.time, note.request_id) == (7, line, "info", AT, request.pk)
    warnings = {w.kind: w for w in apps.get_model("dashboard", "Warning").objects.all()}
    assert set(warnings) == {"unexplained-miss", "fold-error"}
    assert apps.get_model("dashboard", "Session").objects.get().warning_count == 2
    miss = warnings["unexplained-miss"]
    # The migration imports no live code, so it leaves the stakes to the refresh an upgrade runs.
    assert (miss.happened_at, miss.tokens_at_stake, miss.cost_at_stake, miss.seq) == (AT, 0, None, None)
    fold = warnings["fold-error"]
    assert (fold.happened_at, fold.seq, fold.tokens_at_stake) == (AT, 9, 0)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert warning_stakes_refresh(session_ids=[session.pk], prices=prices_load()) == 1
    staked = Warning.objects.get(kind="unexplained-miss")
    assert (staked.tokens_at_stake, staked.cost_at_stake) == (10_000, Decimal("0.027"))
