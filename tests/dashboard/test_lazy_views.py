"""A view the URLconf names by its dotted path still answers as itself (what start-up no longer
imports is pinned in ``test_startup_imports``)."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.urls import resolve

from dashboard.web.lazy_views import LazyView


def test_a_lazy_view_names_its_view_before_importing_it_then_stands_for_it() -> None:
    view = LazyView("dashboard.web.favicon.favicon")
    assert view.__module__ == "dashboard.web.favicon"
    assert view.__qualname__ == "favicon"
    assert "view" not in view.__dict__
    from dashboard.web.favicon import favicon

    assert view.view is favicon


def test_a_lazy_view_names_a_missing_view_when_it_is_first_used() -> None:
    view = LazyView("dashboard.web.favicon.no_such_view")
    with pytest.raises(ImportError, match="no_such_view"):
        view(RequestFactory().get("/"))


def test_middleware_reads_the_real_views_flags_through_the_stand_in() -> None:
    logs = resolve("/v1/logs").func
    assert isinstance(logs, LazyView)
    assert logs.csrf_exempt is True
    assert logs.login_required is False
    assert not hasattr(resolve("/sessions/").func, "login_required")


@pytest.mark.django_db
def test_an_exempt_view_answers_without_a_session_and_a_page_still_asks_for_one() -> None:
    client = Client(enforce_csrf_checks=True)
    icon = client.get("/favicon.ico")
    icon.close()  # a file response: closing it closes the file
    assert icon.status_code == 200
    page = client.get("/sessions/")
    assert page.status_code == 302
    assert page["Location"].startswith("/accounts/login/")
