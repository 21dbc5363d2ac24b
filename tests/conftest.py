from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from importlib import import_module
from pathlib import Path

import pytest

PRICE_SEEDS = ("0005_api_tokens_prices", "0043_prices_of_every_rule_family")
"""The migrations that seed the price table, in order."""
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _seeded_prices(request: pytest.FixtureRequest) -> None:
    """Every database test starts with the price table migrations 0005 and 0043 seed and the default
    alert rule, as a deployment does.

    A transactional test (a live server's) ends by flushing every table, seeded rows included, so
    without this a test that prices a request would pass or fail by which tests ran before it.
    """
    marker = request.node.get_closest_marker("django_db")
    transactional = "live_server" in request.fixturenames or (
        marker is not None and bool(marker.kwargs.get("transaction"))
    )
    if marker is None and not transactional:
        return
    request.getfixturevalue("transactional_db" if transactional else "db")
    from django.apps import apps

    from dashboard.models import AlertRule, ModelPrice
    from dashboard.models.alerts import DEFAULT_RULE, DEFAULT_RULE_NAME

    if not ModelPrice.objects.exists():
        for migration in PRICE_SEEDS:
            import_module(f"dashboard.migrations.{migration}").seed_prices(apps, None)
    if not AlertRule.objects.exists():  # the rule the alerts migration adds, flushed likewise
        AlertRule.objects.create(name=DEFAULT_RULE_NAME, **DEFAULT_RULE)


@pytest.fixture
def wall_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[datetime], None]:
    """Set the moment the pages' time ranges count back from (the live server's thread too)."""
    from dashboard.web import time_range

    def set_to(moment: datetime) -> None:
        monkeypatch.setattr(time_range, "wall_clock", lambda: moment)

    return set_to


@pytest.fixture
def shared_data() -> Path:
    """The real agent logs beside the checkout; tests using it skip where the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not present on this machine")
    return SHARED_DATA


def pytest_configure(config: pytest.Config) -> None:
    """Link static files by their plain names, served from static/, so no test needs collectstatic.

    The hashed names of the deployed storage would need a manifest that a fresh checkout lacks, and
    one left over from an earlier collectstatic would serve stale copies of files being edited.
    """
    import os

    from django.conf import settings

    # Every fold and analysis runs in the command that stored its session, in this process and in
    # the whole processes tests start, so a test reads them as soon as the ingest returns; the
    # background drain has tests of its own (tests/dashboard/test_background_followups.py).
    os.environ["CACHESCOPE_FOLLOWUPS"] = "inline"
    settings.CACHESCOPE_FOLLOWUPS = "inline"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
