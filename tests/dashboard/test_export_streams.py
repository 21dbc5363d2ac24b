"""The one answer of the lists' exports: the sessions and the requests list refuse and name their
downloads alike."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.web.export_streams import export_response
from tests.dashboard.test_listing import make_sessions

pytestmark = pytest.mark.django_db
LISTS = [("dashboard:sessions_export", "sessions"), ("dashboard:requests_export", "requests")]
BAD_FILTER = {"dashboard:sessions_export": "min_tokens", "dashboard:requests_export": "min_wasted"}


@pytest.mark.parametrize(("route", "name"), LISTS)
@pytest.mark.parametrize(
    ("fmt", "content_type"), [("csv", "text/csv; charset=utf-8"), ("json", "application/json")]
)
def test_a_download_is_named_after_its_list_the_time_and_its_format(
    viewer_client: Client, route: str, name: str, fmt: str, content_type: str
) -> None:
    make_sessions(2)
    response = viewer_client.get(reverse(route, args=[fmt]))
    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert re.fullmatch(
        rf'attachment; filename="cachescope-{name}-\d{{8}}T\d{{6}}Z\.{fmt}"', response["Content-Disposition"]
    )


@pytest.mark.parametrize(("route", "name"), LISTS)
def test_a_bad_filter_is_refused_with_every_reason_and_nothing_exported(
    viewer_client: Client, route: str, name: str
) -> None:
    make_sessions(2)
    response = viewer_client.get(reverse(route, args=["csv"]), {BAD_FILTER[route]: "-3", "since": "soon"})
    assert response.status_code == 400
    assert response["Content-Type"] == "text/plain"
    assert "Content-Disposition" not in response
    body = response.content.decode()
    assert body.startswith("bad filter, nothing exported: ")
    assert f"{BAD_FILTER[route]}: '-3' is not" in body
    assert "since: 'soon' is not" in body


@pytest.mark.parametrize(("route", "name"), LISTS)
def test_an_unknown_format_is_not_found_even_with_a_bad_filter(
    viewer_client: Client, route: str, name: str
) -> None:
    response = viewer_client.get(reverse(route, args=["xml"]), {BAD_FILTER[route]: "-3"})
    assert response.status_code == 404


def test_the_rows_are_read_only_once_the_export_goes_ahead() -> None:
    def rows() -> Any:
        raise AssertionError("a refused export read its rows")

    refused = export_response(fmt="csv", name="x", errors={"q": "bad"}, columns=("a",), rows=rows)
    assert refused.status_code == 400


def test_a_list_is_one_csv_cell_of_its_items_where_json_keeps_it_a_list() -> None:
    def rows() -> list[dict[str, Any]]:
        return [{"models": ["=opus", "sonnet"]}]

    answers = {
        fmt: export_response(fmt=fmt, name="x", errors={}, columns=("models",), rows=rows)
        for fmt in ("csv", "json")
    }
    bodies = {fmt: b"".join(answer.streaming_content).decode() for fmt, answer in answers.items()}  # type: ignore[union-attr]
    assert bodies == {"csv": "models\r\n'=opus sonnet\r\n", "json": '[\n{"models": ["=opus", "sonnet"]}\n]\n'}
