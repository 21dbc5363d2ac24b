"""The projection rows' tallies, kept by the database's triggers, add up to the rows themselves."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Count, Max, Q, Sum

from dashboard.models import ProjectionRow, ProjectionTally, Session
from dashboard.refold import tally as projection_tally
from dashboard.refold.folds import fold_session
from dashboard.refold.runs import fold_run_create, refold_run
from dashboard.refold.tally import projection_tallies, projection_tallies_merge
from tests.dashboard.migration_states import migrated_to
from tests.dashboard.test_folds import bad_claim_log, conversation, store_events, stored_session
from tests.dashboard.test_refold import corpus, store_corpus

BEFORE = [("dashboard", "0025_request_model_ingest_recent_indexes")]
AFTER = [("dashboard", "0026_projection_tally")]


def counted() -> dict[tuple[str, int], tuple[int, int, int]]:
    """What the page showed before the tallies: the rows aggregated, per key and version."""
    return {
        (row["key"], row["ver"]): (row["rows"], row["bytes"], row["errors"])
        for row in ProjectionRow.objects.values("key", "ver")
        .annotate(rows=Count("id"), bytes=Sum("state_bytes"), errors=Count("id", filter=~Q(error="")))
        .order_by()
    }


def tallied() -> dict[tuple[str, int], tuple[int, int, int]]:
    return {key: (t.rows, t.state_bytes, t.errors) for key, t in projection_tallies().items()}


def test_a_fold_tallies_the_rows_it_writes(db: None) -> None:
    fold_session(session_id=stored_session(conversation().events).pk)
    fold_session(session_id=stored_session(conversation(turns=5).events, external_id="s2").pk)
    assert tallied() == counted()
    assert {rows for rows, _, _ in tallied().values()} == {2}


def test_folding_a_longer_log_again_keeps_one_row_per_session_and_the_new_bytes(db: None) -> None:
    log = conversation()
    session = stored_session(log.events)
    fold_session(session_id=session.pk)
    before = projection_tallies()[("tokenUsage", 1)].last_fold
    stored = len(log.events)
    log.user("and then a much longer question " * 20)
    store_events(session, log.events[stored:])
    fold_session(session_id=session.pk)
    assert tallied() == counted()
    assert projection_tallies()[("tokenUsage", 1)].last_fold > before  # the rows were written again
    assert {rows for rows, _, _ in tallied().values()} == {1}


def test_a_stopped_fold_counts_as_an_error(db: None) -> None:
    fold_session(session_id=stored_session(bad_claim_log().events).pk)
    assert tallied() == counted()
    assert sum(errors for _, _, errors in tallied().values()) >= 1


def test_a_refold_moves_the_tally_to_the_new_version(db: None) -> None:
    store_corpus(corpus())  # every session has a contextBreakdown v5 row
    assert tallied()[("contextBreakdown", 5)][0] == 6
    refold_run(run_id=fold_run_create(key="contextBreakdown", from_version=5, to_version=6).pk)
    assert tallied() == counted()
    assert ("contextBreakdown", 5) not in tallied()
    assert tallied()[("contextBreakdown", 6)][0] == 6  # a row each, the stopped fold with its error


def test_deleting_a_session_takes_its_rows_out_of_the_tally(db: None) -> None:
    kept = stored_session(conversation().events)
    gone = stored_session(conversation().events, external_id="gone")
    fold_session(session_id=kept.pk)
    fold_session(session_id=gone.pk)
    Session.objects.filter(pk=gone.pk).delete()
    assert tallied() == counted()
    assert {rows for rows, _, _ in tallied().values()} == {1}


def test_a_version_with_no_rows_left_is_not_listed(db: None) -> None:
    fold_session(session_id=stored_session(conversation().events).pk)
    ProjectionRow.objects.all().delete()
    assert projection_tallies() == {}


def test_merging_keeps_the_sums_and_leaves_one_row_per_key_and_version(db: None) -> None:
    for n in range(3):
        fold_session(session_id=stored_session(conversation(turns=2 + n).events, external_id=f"s{n}").pk)
    before = projection_tallies()
    parts = ProjectionTally.objects.count()
    assert projection_tallies_merge() == parts
    assert projection_tallies() == before
    assert ProjectionTally.objects.count() == len(before)
    assert (
        before[("contextBreakdown", 8)].last_fold
        == ProjectionRow.objects.filter(key="contextBreakdown").aggregate(t=Max("updated_at"))["t"]
    )


def test_a_read_merges_the_tallies_once_they_pile_up(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(projection_tally, "MERGE_OVER", 3)
    fold_session(session_id=stored_session(conversation().events).pk)
    first = projection_tallies()  # more than three rows: merged after reading
    assert ProjectionTally.objects.count() == len(first)
    assert projection_tallies() == first


def test_merging_again_after_more_folds_keeps_the_sums(db: None) -> None:
    fold_session(session_id=stored_session(conversation().events).pk)
    projection_tallies_merge()
    before = tallied()
    fold_session(session_id=stored_session(conversation(turns=4).events, external_id="s2").pk)
    parts = ProjectionTally.objects.count()
    assert projection_tallies_merge() == parts
    assert projection_tallies_merge() == len(before)  # merging merged rows changes nothing
    assert tallied() == counted()
    assert {rows for rows, _, _ in tallied().values()} == {2}


@pytest.mark.django_db(transaction=True)
def test_the_migration_tallies_the_rows_already_stored_and_reverses() -> None:
    apps = migrated_to(BEFORE)
    source = apps.get_model("dashboard", "Source").objects.create(name="laptop")
    session = apps.get_model("dashboard", "Session")
    row = apps.get_model("dashboard", "ProjectionRow").objects
    for n in range(3):
        stored = session.objects.create(source=source, external_id=f"s{n}", format="dsh")
        row.create(session=stored, key="tokenUsage", ver=1, seq=4, val={}, state_bytes=10 + n)
        row.create(
            session=stored, key="contextBreakdown", ver=8, seq=None, val={}, error="stopped" if n else ""
        )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    assert tallied() == {("tokenUsage", 1): (3, 33, 0), ("contextBreakdown", 8): (3, 0, 2)}
    ProjectionRow.objects.filter(key="tokenUsage", state_bytes=10).delete()  # the triggers now keep it
    assert tallied()[("tokenUsage", 1)] == (2, 23, 0)
    assert projection_tallies()[("tokenUsage", 1)].last_fold is not None

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    assert "dashboard_projectiontally" not in connection.introspection.table_names()
    row = executor.loader.project_state(BEFORE).apps.get_model("dashboard", "ProjectionRow").objects
    row.filter(key="tokenUsage").delete()  # no trigger is left to write to the dropped table
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes("dashboard"))
