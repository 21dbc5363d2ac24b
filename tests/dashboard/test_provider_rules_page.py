from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from dashboard.models import ModelPrice
from projections.providers.mechanics import CHECKED
from projections.providers.rules import MODEL_RULES

pytestmark = pytest.mark.django_db
URL = reverse("dashboard:provider_rules")


def test_the_provider_rules_need_a_login(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert "login" in response["Location"]


def test_the_provider_rules_are_refused_below_the_admin_role(
    viewer_client: Client, operator_client: Client
) -> None:
    assert viewer_client.get(URL).status_code == 403
    assert operator_client.get(URL).status_code == 403


def test_an_admin_reads_every_family_with_its_figures_sources_and_the_day_they_were_checked(
    make_user: Callable[..., User],
) -> None:
    client = Client()
    client.force_login(make_user("root", "admin"))
    response = client.get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    assert f'Last checked <time datetime="{CHECKED.isoformat()}">' in page
    for rule in MODEL_RULES:
        assert rule.family.replace("'", "&#x27;") in page
        assert rule.minimum_source.url in page
    assert "Claude Opus 4.7" in page
    assert "2,048" in page
    assert "openai-breakpoints" in page
    assert "30m 1.25x" in page
    assert "change note" in page


def test_the_page_only_reads(make_user: Callable[..., User]) -> None:
    client = Client()
    client.force_login(make_user("root", "admin"))
    assert client.post(URL, {}).status_code == 405


def test_each_family_shows_the_prices_the_price_table_holds_for_it(make_user: Callable[..., User]) -> None:
    client = Client()
    client.force_login(make_user("root", "admin"))
    flash = ModelPrice.objects.get(pattern="deepseek-v4-flash")
    flash.input = Decimal("0.1234")
    flash.save()

    response = client.get(URL)

    rows = {row["rule"].family: row for _provider, rows in response.context["groups"] for row in rows}
    assert [price.pattern for price in rows["DeepSeek V4 (Flash, Pro)"]["prices"]] == [
        "deepseek-v4-flash",
        "deepseek-v4-pro",
    ]
    page = response.content.decode()
    assert "<code>deepseek-v4-flash</code></a> 0.1234 · " in page  # read from the table, not the rules
    assert rows["Claude Mythos Preview"]["prices"] == []
    assert "no price · <a href" in page
