"""The inbox's groups, kept by the database's triggers, equal the warnings grouped on the spot."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dashboard.analysis.session_warnings import session_warn
from dashboard.analysis.warnings import warning_stakes_refresh
from dashboard.costs.pricing import prices_load
from dashboard.models import Session, Warning, WarningGroup
from tests.dashboard.migration_states import migrated_to
from tests.dashboard.test_analysis import START, usage_row
from tests.dashboard.test_warnings_inbox import session_named, warn

BEFORE = [("dashboard", "0026_projection_tally")]
AFTER = [("dashboard", "0027_warning_groups")]
FIELDS = ("kind", "session_id", "places", "occurrences", "tokens", "cost", "happened")


def kept() -> list[tuple[Any, ...]]:
    return sorted(WarningGroup.objects.values_list(*FIELDS), key=lambda row: (row[0], row[1]))


def grouped() -> list[tuple[Any, ...]]:
    """What the inbox read before the groups were kept: the warnings aggregated."""
    return sorted(
        (tuple(row[name] for name in FIELDS) for row in Warning.objects.groups()),
        key=lambda row: (row[0], row[1]),
    )


@pytest.mark.django_db
def test_adding_changing_and_removing_warnings_keeps_each_group_summed() -> None:
    one, two = session_named("one"), session_named("two")
    first = warn(one, "over-credit", "main", "0.10", hours=1, count=3)
    warn(one, "over-credit", "side", "0.04", hours=5)
    warn(two, "over-credit", "main", None, hours=2)
    warn(two, "marker-limit", "main", "0.15", hours=3)
    assert kept() == grouped()
    assert len(kept()) == 3

    first.count, first.cost_at_stake, first.happened_at = 7, Decimal("1.5"), START + timedelta(hours=9)
    first.save()
    assert kept() == grouped()
    Warning.objects.filter(session=two, kind="marker-limit").delete()
    assert kept() == grouped()
    assert ("marker-limit", two.pk) not in {(k, s) for k, s, *_ in kept()}
    Warning.objects.filter(session=one).update(tokens_at_stake=5)
    assert kept() == grouped()


@pytest.mark.django_db
def test_a_group_without_a_price_sums_to_no_cost() -> None:
    session = session_named("one")
    warn(session, "fold-error", "seq 4", None, hours=1)
    warn(session, "fold-error", "seq 5", None, hours=2)
    assert kept() == grouped()
    assert [(group.places, group.cost) for group in WarningGroup.objects.all()] == [(2, None)]
    session_warn(session_id=session.pk, kind="fold-error", place="seq 9", message="stopped", seq=9)
    assert kept() == grouped()
    assert WarningGroup.objects.get().places == 3


@pytest.mark.django_db
def test_a_price_refresh_restakes_the_groups() -> None:
    session = session_named("one")
    request = usage_row(session, 0, START, read=1_000, write=0)
    Warning.objects.create(
        session=session, request=request, kind="unexplained-miss", place="main", message="m"
    )
    warning_stakes_refresh(session_ids=[session.pk], prices=prices_load())
    assert kept() == grouped()
    assert WarningGroup.objects.get().tokens == Warning.objects.get().tokens_at_stake


@pytest.mark.django_db
def test_deleting_a_session_removes_its_groups() -> None:
    kept_session, gone = session_named("kept"), session_named("gone")
    warn(kept_session, "over-credit", "main", "1", hours=1)
    warn(gone, "over-credit", "main", "1", hours=1)
    Session.objects.filter(pk=gone.pk).delete()
    assert kept() == grouped()
    assert [session for _, session, *_ in kept()] == [kept_session.pk]


@pytest.mark.django_db(transaction=True)
def test_the_migration_groups_the_warnings_already_stored_and_reverses() -> None:
    apps = migrated_to(BEFORE)
    source = apps.get_model("dashboard", "Source").objects.create(name="laptop")
    session = apps.get_model("dashboard", "Session").objects.create(
        source=source, external_id="s", format="dsh"
    )
    warning = apps.get_model("dashboard", "Warning").objects
    warning.create(
        session=session, kind="over-credit", place="a", message="m", count=2, cost_at_stake=Decimal("1")
    )
    warning.create(session=session, kind="over-credit", place="b", message="m", tokens_at_stake=40)
    warning.create(session=session, kind="fold-error", place="c", message="m", happened_at=START)

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    assert kept() == grouped()
    assert sorted(WarningGroup.objects.values_list("kind", "places", "occurrences", "tokens", "cost")) == [
        ("fold-error", 1, 1, 0, None),
        ("over-credit", 2, 3, 40, Decimal("1")),
    ]
    Warning.objects.filter(place="a").delete()  # the triggers now keep them
    assert kept() == grouped()

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    assert "dashboard_warninggroup" not in connection.introspection.table_names()
    warning = executor.loader.project_state(BEFORE).apps.get_model("dashboard", "Warning").objects
    warning.all().delete()  # no trigger is left to write to the dropped table
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes("dashboard"))
