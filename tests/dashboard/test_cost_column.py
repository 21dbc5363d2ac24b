"""Cost as a first-class column: the sessions list sorts by it, a price change prices every session
again, the exports give it as a number, and a model without a price is named with a way to add one
while the totals it is left out of say they are partial."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboard.costs.session_costs import sessions_reprice
from dashboard.fleet.rollups import rollups_rebuild
from dashboard.models import ModelPrice, Request, RequestAnalysis, Session, Source
from dashboard.sessions.summaries import session_refresh_summary

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 4, 15, 0, tzinfo=UTC)
MILLION = 1_000_000


@pytest.fixture(autouse=True)
def _now_is_the_day_of_the_fleet(wall_clock: Callable[[datetime], None]) -> None:
    wall_clock(T0 + timedelta(hours=2))


def stored(name: str, *calls: tuple[str, int], source: str = "farm") -> Session:
    """A session of ``(model, uncached input tokens)`` calls, summed as an ingest sums it."""
    session = Session.objects.create(
        source=Source.objects.get_or_create(name=source)[0], external_id=name, format="dsh", started_at=T0
    )
    for ordinal, (model, tokens) in enumerate(calls):
        Request.objects.create(
            session=session,
            ordinal=ordinal,
            key=f"r{ordinal}",
            provider="anthropic",
            model=model,
            started_at=T0 + timedelta(minutes=ordinal),
            uncached_input_tokens=tokens,
            output_tokens=0,
        )
    session_refresh_summary(session)
    return session


def listed(client: Client, **params: str) -> list[str]:
    return [s.external_id for s in client.get(reverse("dashboard:sessions"), params).context["page"].rows]


def admin_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("root", "admin"))
    return client


def test_the_sessions_list_sorts_by_cost_costliest_first_and_unpriced_last(viewer_client: Client) -> None:
    stored("cheap", ("claude-haiku-4-5", MILLION))  # $1
    stored("dear", ("claude-opus-4-1", MILLION))  # $15
    stored("middling", ("claude-sonnet-4", MILLION))  # $3
    stored("unknown", ("house-model", MILLION))
    sessions_reprice()

    assert listed(viewer_client, sort="-cost") == ["dear", "middling", "cheap", "unknown"]
    assert listed(viewer_client, sort="cost") == ["unknown", "cheap", "middling", "dear"]
    page = viewer_client.get(reverse("dashboard:sessions"), {"sort": "-cost"}).content.decode()
    assert 'aria-sort="descending"><a href="?sort=cost"' in page.replace("&amp;", "&")


def test_a_session_is_priced_on_its_first_listing_when_nothing_priced_it_before(
    viewer_client: Client,
) -> None:
    session = stored("fresh", ("claude-sonnet-4", MILLION))
    assert session.cost_usd is None

    page = viewer_client.get(reverse("dashboard:sessions")).content.decode()

    session.refresh_from_db()
    assert session.cost_usd == Decimal(3)
    assert "$3.00" in page


def test_a_price_change_prices_every_session_again_and_reorders_the_list(
    make_user: Callable[..., User], viewer_client: Client
) -> None:
    stored("sonnet", ("claude-sonnet-4", MILLION))
    stored("haiku", ("claude-haiku-4-5", MILLION))
    sessions_reprice()
    assert listed(viewer_client, sort="-cost") == ["sonnet", "haiku"]
    haiku = ModelPrice.objects.get(pattern="claude-haiku-4-5")

    response = admin_client(make_user).post(
        reverse("dashboard:price_edit", args=[haiku.pk]),
        {
            "pattern": haiku.pattern,
            "provider": haiku.provider,
            "input": "20",
            "cache_write_5m": "25",
            "cache_write_1h": "40",
            "cache_read": "2",
            "output": "100",
            "source_url": "",
            "read_on": "2026-12-04",
        },
        follow=True,
    )

    assert "1 session cost changed." in response.content.decode()
    assert Session.objects.get(external_id="haiku").cost_usd == Decimal(20)
    assert listed(viewer_client, sort="-cost") == ["haiku", "sonnet"]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_the_sessions_export_gives_the_cost_the_list_shows(viewer_client: Client, fmt: str) -> None:
    stored("priced", ("claude-sonnet-4", 2_500))
    stored("unknown", ("house-model", MILLION))

    response = viewer_client.get(reverse("dashboard:sessions_export", args=[fmt]), {"sort": "-cost"})
    body = b"".join(response.streaming_content).decode()

    if fmt == "json":
        rows = json.loads(body)
        assert [(row["session_id"], row["cost_usd"]) for row in rows] == [
            ("priced", 0.0075),
            ("unknown", None),
        ]
        assert rows[1]["unpriced_requests"] == 1
    else:
        assert "priced" in body.splitlines()[1]
        assert ",0.0075," in body.splitlines()[1]


def test_a_session_without_a_price_says_so_and_an_admin_can_add_one(
    make_user: Callable[..., User], viewer_client: Client
) -> None:
    session = stored("unknown", ("house-model-2", 1_000), ("claude-sonnet-4", MILLION))
    sessions_reprice()

    viewer_page = viewer_client.get(session.get_absolute_url()).content.decode()
    admin = admin_client(make_user)
    admin_page = admin.get(session.get_absolute_url()).content.decode()

    assert "partial</span>" in viewer_page
    assert '1 request left out: <span class="no-price">no price for <code>house-model-2</code>' in viewer_page
    assert "add one" not in viewer_page  # only an admin edits prices
    link = reverse("dashboard:prices") + "?pattern=house-model-2"
    assert f'href="{link}">add one</a>' in admin_page
    form = admin.get(link).context["form"]
    assert form["pattern"].value() == "house-model-2"
    listing = viewer_client.get(reverse("dashboard:sessions")).content.decode()
    assert 'partial: <span class="no-price">no price for <code>house-model-2</code>' in listing


def test_the_fleet_cost_says_it_is_partial_and_counts_what_it_leaves_out(viewer_client: Client) -> None:
    stored("priced", ("claude-sonnet-4", MILLION))
    stored("harness", ("deepseek-v9-lab", 1_000), ("deepseek-v9-lab", 1_000), source="harness")
    rollups_rebuild()

    response = viewer_client.get(reverse("dashboard:overview"))
    page = response.content.decode()

    fleet_cost = response.context["fleet_cost"]
    assert (fleet_cost.total, fleet_cost.unpriced_requests, fleet_cost.unpriced_models) == (
        Decimal(3),
        2,
        ("deepseek-v9-lab",),
    )
    assert '<span class="badge warn">partial</span>' in page
    assert '2 requests left out: <span class="no-price">no price for <code>deepseek-v9-lab</code>' in page
    [harness] = [row for row, _ in response.context["sources"] if row.source.name == "harness"]
    assert harness.unpriced_models == ("deepseek-v9-lab",)


def test_a_fleet_of_deepseek_v4_is_priced_not_left_out(viewer_client: Client) -> None:
    stored("flash", ("deepseek-v4-flash", MILLION), source="harness")
    stored("pro", ("deepseek-v4-pro", MILLION), source="harness")
    rollups_rebuild()

    fleet_cost = viewer_client.get(reverse("dashboard:overview")).context["fleet_cost"]

    flash, pro = (
        ModelPrice.objects.get(pattern=name).input for name in ("deepseek-v4-flash", "deepseek-v4-pro")
    )
    assert (fleet_cost.total, fleet_cost.unpriced_requests, fleet_cost.partial) == (flash + pro, 0, False)


def test_the_session_page_leads_to_its_costliest_miss(viewer_client: Client) -> None:
    session = stored(
        "misses", ("claude-sonnet-4", 1_000), ("claude-sonnet-4", 9_000), ("claude-sonnet-4", 5_000)
    )
    calls = list(session.requests.order_by("ordinal"))
    for call, cost, material in zip(calls, ("0.003", "0.027", "0.015"), (False, True, True), strict=True):
        RequestAnalysis.objects.create(
            request=call, session=session, material=material, label="ttl-expired", cost=Decimal(cost)
        )

    page = viewer_client.get(session.get_absolute_url()).content.decode()

    link = f'<a href="{calls[1].get_absolute_url()}" id="costliest-miss">the costliest: request 2, $0.027'
    assert link in page
