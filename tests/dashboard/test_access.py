"""Every route of dashboard.urls, walked from the resolver, against every role (DESIGN §9)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from dashboard import models
from dashboard.access.tokens import token_create

pytestmark = pytest.mark.django_db

PUBLIC = {"login", "logout", "favicon", "healthz"}
"""The sign-in pages, which must be reachable without a session, the icon a browser shows on them,
and the health check a load balancer reads (its state words name nothing; its details need the
health token: tests/dashboard/test_health.py)."""
API = {"api_ingest", "api_batches", "api_batch", "otlp_logs", "otlp_traces", "otlp_metrics", "metrics"}
"""Routes that authenticate by bearer token and answer 401 instead of redirecting."""
ADMIN_PREFIX = "manage/"


@dataclass(frozen=True)
class Route:
    name: str
    path: str
    params: tuple[str, ...]

    @property
    def is_admin_page(self) -> bool:
        return self.path.startswith(ADMIN_PREFIX)

    def __str__(self) -> str:
        return self.name


def _walk(patterns: list[URLPattern | URLResolver], namespace: str = "", prefix: str = "") -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name == "admin":
                continue  # Django's own admin site has its own staff login
            inner = pattern.namespace or namespace
            yield from _walk(pattern.url_patterns, inner, prefix + str(pattern.pattern))
        elif pattern.name is not None:
            name = f"{namespace}:{pattern.name}" if namespace else pattern.name
            yield Route(name, prefix + str(pattern.pattern), tuple(pattern.pattern.regex.groupindex))


ROUTES = [route for route in _walk(get_resolver("dashboard.urls").url_patterns) if route.name not in PUBLIC]


def _session() -> models.Session:
    source, _ = models.Source.objects.get_or_create(name="farm")
    session, _ = models.Session.objects.get_or_create(
        source=source, external_id="s1", defaults={"format": "dsh"}
    )
    return session


def _request() -> int:
    return models.Request.objects.create(session=_session(), ordinal=0, key="r0", provider="anthropic").pk


def _fold_run() -> int:
    return models.FoldRun.objects.create(key="contextBreakdown", from_version=5, to_version=6).pk


def _price() -> int:
    zero = Decimal(1)
    return models.ModelPrice.objects.create(
        pattern="house-model",
        input=zero,
        output=zero,
        cache_write_5m=zero,
        cache_write_1h=zero,
        cache_read=zero,
        read_on=date(2026, 1, 1),
    ).pk


def _alert() -> int:
    rule = models.AlertRule.objects.create(name="watched")
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return models.Alert.objects.create(
        rule=rule, slice_key="source=farm", opened_at=moment, checked_at=moment, baseline=0.9, current=0.3
    ).pk


ROW_FACTORIES: dict[str, Callable[[], int | str]] = {
    "session_id": lambda: _session().pk,
    "request_id": _request,
    "job_id": lambda: models.IngestJob.objects.create(kind="upload").pk,
    "run_id": _fold_run,
    "token_id": lambda: token_create(source=_session().source, name="h", created_by=None)[0].pk,
    "price_id": _price,
    "alert_id": _alert,
    "rule_id": lambda: models.AlertRule.objects.create(name="house rule").pk,
    "fmt": lambda: "csv",
    "seq": lambda: (
        models.Event.objects.get_or_create(
            session=_session(), seq=0, defaults={"type": "user/message", "data": {}}
        )[0].seq
    ),
}


def url_of(route: Route) -> str:
    missing = [name for name in route.params if name not in ROW_FACTORIES]
    if missing:
        pytest.fail(f"{route}: no row factory for {missing}; add one to ROW_FACTORIES in {__file__}")
    return reverse(route.name, kwargs={name: ROW_FACTORIES[name]() for name in route.params})


def _client(make_user: Callable[..., User], role: str) -> Client:
    client = Client()
    client.force_login(make_user(role, role))
    return client


def test_the_walk_finds_the_pages_the_api_and_the_admin_pages() -> None:
    names = {route.name for route in ROUTES}
    assert {"dashboard:sessions", "dashboard:tokens", "dashboard:prices", "api_ingest"} <= names


@pytest.mark.parametrize("route", ROUTES, ids=str)
@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_users_are_sent_to_login_and_the_api_answers_401(route: Route, method: str) -> None:
    response = getattr(Client(), method)(url_of(route))
    if route.name in API:
        assert response.status_code == 401
    else:
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("route", [r for r in ROUTES if r.name not in API], ids=str)
def test_viewers_are_refused_every_action_and_admin_page(
    route: Route, make_user: Callable[..., User]
) -> None:
    client = _client(make_user, "viewer")
    url = url_of(route)
    posted = client.post(url)
    # A page that takes no POST answers 405 before any role check; every action answers 403.
    assert posted.status_code in (403, 405), f"{route}: POST as viewer gave {posted.status_code}"
    read = client.get(url)
    if route.is_admin_page:
        assert read.status_code in (403, 405), f"{route}: GET as viewer gave {read.status_code}"
    else:
        assert read.status_code != 403, f"{route}: a viewer may read it"
        assert read.status_code < 500


@pytest.mark.parametrize("route", [r for r in ROUTES if r.is_admin_page], ids=str)
def test_operators_are_refused_the_admin_pages(route: Route, make_user: Callable[..., User]) -> None:
    client = _client(make_user, "operator")
    url = url_of(route)
    assert client.get(url).status_code in (403, 405)
    assert client.post(url).status_code == 403


@pytest.mark.parametrize("route", [r for r in ROUTES if r.name not in API], ids=str)
@pytest.mark.parametrize("method", ["get", "post"])
def test_admins_reach_everything(route: Route, method: str, make_user: Callable[..., User]) -> None:
    client = _client(make_user, "admin")
    response = getattr(client, method)(url_of(route))
    # 405: the route takes the other method; 400: an empty form was refused by the page itself.
    assert response.status_code not in (401, 403, 404), (
        f"{route}: {method.upper()} as admin gave {response.status_code}"
    )
    assert response.status_code < 500
