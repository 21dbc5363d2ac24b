"""After ``migrate``, every session has its cost ledger and its cost, whenever it was stored."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from dashboard.costs.migrate_hooks import make_missing_cost_ledgers
from dashboard.costs.pricing import COST_PLACES
from dashboard.costs.session_costs import ledgers_refresh, session_cost
from dashboard.models import Session, SessionCostLedger, Source
from dashboard.sessions.summaries import session_refresh_summary
from tests.dashboard.test_analysis import START, usage_row

pytestmark = pytest.mark.django_db


def session_without_ledger() -> Session:
    """A session as stored before ledgers existed: its requests, no ledger."""
    session = Session.objects.create(source=Source.objects.create(name="laptop"), external_id="old")
    usage_row(session, 0, START, read=0, write=12_000, model="claude-sonnet-4-20250514")
    return session


def state_at(name: str) -> object:
    """The apps registry the migrations leave at ``dashboard.name``."""
    return MigrationLoader(connection).project_state(("dashboard", name)).apps


def test_migrate_makes_the_ledger_a_session_stored_before_ledgers_lacks() -> None:
    session = session_without_ledger()
    out = io.StringIO()
    call_command("migrate", verbosity=1, stdout=out)
    ledger = SessionCostLedger.objects.get(session=session)
    assert set(ledger.tallies) == {"claude-sonnet-4-20250514"}
    assert "Made the cost ledgers of 1 sessions" in out.getvalue()

    out = io.StringIO()
    call_command("migrate", verbosity=1, stdout=out)  # nothing left to make: nothing said
    assert "cost ledgers" not in out.getvalue()


def test_a_migration_backwards_or_a_flush_makes_no_ledger() -> None:
    session_without_ledger()
    latest = state_at(MigrationLoader(connection).graph.leaf_nodes("dashboard")[0][1])
    make_missing_cost_ledgers(plan=[(object(), True)], apps=latest)
    make_missing_cost_ledgers(plan=None, apps=None)  # what flush sends
    assert not SessionCostLedger.objects.exists()
    make_missing_cost_ledgers(plan=[], apps=latest)
    assert SessionCostLedger.objects.count() == 1


def test_a_schema_left_behind_the_code_makes_no_ledger() -> None:
    session_without_ledger()
    make_missing_cost_ledgers(plan=[], apps=state_at("0028_fold_result_listed_indexes"))
    assert not SessionCostLedger.objects.exists()


def test_migrate_prices_a_session_stored_before_sessions_kept_their_cost() -> None:
    session = session_without_ledger()
    session_refresh_summary(session)
    ledgers_refresh(session_ids=[session.pk])
    Session.objects.filter(pk=session.pk).update(cost_usd=None)  # its ledger, from before the column
    out = io.StringIO()

    call_command("migrate", verbosity=1, stdout=out)

    priced = Session.objects.get(pk=session.pk)
    assert priced.cost_usd == session_cost(session=priced, analysis=None).total.quantize(COST_PLACES)
    assert priced.cost_usd > 0
    assert "Priced 1 sessions stored before sessions kept their cost" in out.getvalue()
    out = io.StringIO()
    call_command("migrate", verbosity=1, stdout=out)  # nothing left to price: nothing said
    assert "Priced" not in out.getvalue()
