"""The list filters' models and client releases: each value once, none empty, whatever the database."""

from __future__ import annotations

import pytest

from dashboard.fleet.client_versions import known_client_versions
from dashboard.models import Request, Session, Source
from dashboard.sessions.views import known_models
from dashboard.storage.distinct_values import distinct_values


@pytest.fixture
def requests(db: None) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="lab"), external_id="s1", format="claude-code"
    )
    rows = [
        ("claude-sonnet-4-5", "claude-code 2.0.14"),
        ("claude-opus-4-1", "claude-code 2.0.5"),
        ("claude-sonnet-4-5", "claude-code 2.0.14"),
        ("", ""),
        ("gpt-4.1", "claude-code 1.0.102"),
    ]
    Request.objects.bulk_create(
        Request(
            session=session, ordinal=n, key=f"r{n}", provider="anthropic", model=model, client_version=client
        )
        for n, (model, client) in enumerate(rows)
    )


def test_each_value_once_in_order_and_no_empty_one(requests: None) -> None:
    assert distinct_values(Request, "model") == ["claude-opus-4-1", "claude-sonnet-4-5", "gpt-4.1"]


def test_an_empty_table_has_no_values(db: None) -> None:
    assert distinct_values(Request, "client_version") == []


def test_the_filters_list_models_and_releases_in_release_order(requests: None) -> None:
    from django.core.cache import cache

    cache.clear()
    assert known_models() == ["claude-opus-4-1", "claude-sonnet-4-5", "gpt-4.1"]
    assert known_client_versions() == ["claude-code 1.0.102", "claude-code 2.0.5", "claude-code 2.0.14"]
