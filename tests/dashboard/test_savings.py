"""Each session's what-if figures, kept after its analysis, made again when out of date, and carried
by the session's JSON export."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum
from django.test import Client
from django.urls import reverse

from dashboard.models import ModelPrice, ScenarioSaving, Session, SessionSavings
from dashboard.savings.ranking import savings_ranked, sessions_ranked
from dashboard.savings.refresh import session_savings, session_savings_refresh, session_whatif

pytestmark = pytest.mark.django_db


def test_an_analysed_session_keeps_what_each_scenario_would_save(ingested: Callable[..., Session]) -> None:
    session = ingested()

    kept = SessionSavings.objects.get(session=session)  # made after the analysis, by its task
    assert kept.error == ""
    assert kept.results == session_whatif(session=session).to_json()
    assert kept.best_scenario == "stable-prefix"
    # As recorded $0.48375; with the clock after the history $0.120465.
    assert kept.recorded_cost == Decimal("0.48375")
    assert kept.best_saving == Decimal("0.363285")


def test_the_groups_of_a_scenario_add_up_to_its_saving_by_cause(ingested: Callable[..., Session]) -> None:
    session = ingested()
    rows = ScenarioSaving.objects.filter(session=session, scenario="stable-prefix")

    assert rows.aggregate(total=Sum("saving"))["total"] == Decimal("0.363285")
    by_cause = dict(rows.values_list("cause", "saving"))
    assert by_cause == {"": Decimal(0), "prefix-changed@system": Decimal("0.363285")}
    assert set(rows.values_list("model", "client_version")) == {("claude-sonnet-4-5-20250929", "")}
    assert not ScenarioSaving.objects.filter(session=session, scenario="stable-cache-key").exists()


def test_a_refresh_of_current_figures_does_nothing_and_a_forced_one_leaves_the_same_rows(
    ingested: Callable[..., Session],
) -> None:
    session = ingested()
    before = list(ScenarioSaving.objects.filter(session=session).values_list("scenario", "cause", "saving"))

    assert session_savings_refresh(session_id=session.pk) is False
    assert session_savings_refresh(session_id=session.pk, force=True) is True
    after = list(ScenarioSaving.objects.filter(session=session).values_list("scenario", "cause", "saving"))
    assert sorted(after) == sorted(before)
    assert SessionSavings.objects.filter(session=session).count() == 1


def test_a_price_change_makes_the_figures_again_on_their_next_read(ingested: Callable[..., Session]) -> None:
    session = ingested()
    price = ModelPrice.objects.get(pattern="claude-sonnet-4-5")
    price.cache_write_5m = Decimal("7.5")
    price.save()  # as the Prices page saves an edit

    figures = session_savings(session=session)

    # Writes now cost twice as much: 121,000 x 7.5 + 2,000 x 15 = 937,500 micro-dollars.
    assert figures.recorded_cost == Decimal("0.9375")


def test_a_session_whose_model_has_no_price_keeps_the_reason_and_no_figures(
    ingested: Callable[..., Session],
) -> None:
    ModelPrice.objects.filter(pattern__startswith="claude-sonnet-4").delete()
    session = ingested()

    kept = SessionSavings.objects.get(session=session)
    assert kept.error == "no price for model 'claude-sonnet-4-5-20250929': add it to the price table"
    assert kept.results == []
    assert kept.best_saving is None
    assert not ScenarioSaving.objects.filter(session=session).exists()


def test_the_session_export_carries_the_whatif_list(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("idle")
    response = viewer_client.get(reverse("dashboard:session_export", args=[session.pk]))

    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    body = response.json()
    assert body["session_id"] == "idle"
    assert body["whatif"] == session_whatif(session=session).to_json()
    rows = {row["scenario"]: row for row in body["whatif"]}
    assert rows["ttl-1h"]["read_tokens"] == 63_000
    assert body["whatif_error"] is None


def test_the_session_export_needs_a_login(ingested: Callable[..., Session], client: Client) -> None:
    session = ingested()
    response = client.get(reverse("dashboard:session_export", args=[session.pk]))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_stored_savings_rank_causes_models_and_sessions_without_a_replay(
    ingested: Callable[..., Session], django_assert_num_queries: Any
) -> None:
    clock, idle = ingested("clock"), ingested("idle")

    with django_assert_num_queries(1):
        causes = savings_ranked(by="cause")
    # The clock session's misses are its system prompt's changes; the idle one's, its expired entries:
    # with an hour's TTL requests 4 and 6 read instead of writing, (40,875 - 7,830) + (46,875 - 8,310)
    # micro-dollars, and request 8, two hours idle, writes at 2x instead of 1.25x: 52,875 - 84,600.
    assert [(row.name, row.saving) for row in causes[:2]] == [
        ("prefix-changed@system", Decimal("0.363285")),
        ("ttl-expired", Decimal("0.039885")),
    ]
    by_source = savings_ranked(by="source")
    assert [(row.name, row.sessions) for row in by_source] == [("laptop", 2)]
    assert by_source[0].saving == Decimal("0.363285") + Decimal("0.01356")
    only_idle = savings_ranked(by="model", sessions=Session.objects.filter(pk=idle.pk))
    assert [row.saving for row in only_idle] == [Decimal("0.01356")]
    assert [kept.session for kept in sessions_ranked()] == [clock, idle]
