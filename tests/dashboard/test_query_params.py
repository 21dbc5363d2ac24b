"""Every query parameter of every list page and export, fed what a user can type or forge: a bad value
is ignored with a message (or the export answers 400), never a 500."""

from __future__ import annotations

import base64
import csv
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.ingest.files import ingest_paths
from dashboard.models import Session, Source, Warning
from dashboard.web.export_streams import csv_safe
from tests.dashboard.logs import write_dsh_log

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(tmp_path: Path) -> Session:
    """A stored session with events, requests and a warning, so every filter has rows to narrow."""
    ingest_paths(
        paths=[write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2)], source_name="farm"
    )
    session = Session.objects.get(external_id="s1")
    Warning.objects.create(session=session, kind=Warning.Kind.values[0], place="seq 1", message="x")
    return session


def _get(client: Client, path: str, params: dict[str, str | bytes]) -> Any:
    """GET ``path`` with each value percent-encoded from its bytes (a lone surrogate as the invalid
    UTF-8 a forged URL carries), the streamed body read to its end."""
    query = "&".join(
        f"{name}={quote(value if isinstance(value, bytes) else value.encode('utf-8', 'surrogatepass'))}"
        for name, value in params.items()
    )
    response = client.get(f"{path}?{query}")
    if response.streaming:
        b"".join(response.streaming_content)
    return response


def _cursor(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def test_a_date_at_the_end_of_the_calendar_is_named_and_ignored_on_the_list(
    viewer_client: Client, stored: Session
) -> None:
    response = _get(viewer_client, "/sessions/", {"to": "9999-12-31"})
    assert response.status_code == 200
    assert "to: &#x27;9999-12-31&#x27; is not a date" in response.content.decode()
    assert stored.title in response.content.decode()


def test_an_export_with_a_bad_filter_is_refused_with_400_not_cut_mid_stream(
    viewer_client: Client, stored: Session
) -> None:
    for fmt in ("csv", "json"):
        response = _get(viewer_client, f"/sessions/export.{fmt}", {"to": "9999-12-31"})
        assert response.status_code == 400
        assert b"to:" in response.content


@pytest.mark.parametrize(
    "payload",
    [
        ["v", "notadate", 1],
        ["t", "notadate", 1],
        ["v", 1e308, 1],
        ["t", "2026-01-01T00:00:00", 2**70],
        ["v", "a\u0000", 1],
    ],
)
@pytest.mark.parametrize("sort", ["-activity", "title", "events", "hit_rate"])
def test_a_forged_cursor_starts_the_list_from_the_top(
    viewer_client: Client, stored: Session, payload: Any, sort: str
) -> None:
    for direction in ("after", "before"):
        response = _get(viewer_client, "/sessions/", {"sort": sort, direction: _cursor(payload)})
        assert response.status_code == 200


@pytest.mark.parametrize(
    ("path", "name"),
    [("/sessions/", "q"), ("/sessions/", "source"), ("/sessions/", "model"), ("/requests/", "model"),
     ("/warnings/", "source"), ("/sessions/{id}/", "type"), ("/sessions/{id}/events/", "type")],
)  # fmt: skip
def test_a_nul_in_a_text_filter_is_ignored(
    viewer_client: Client, stored: Session, path: str, name: str
) -> None:
    response = _get(viewer_client, path.format(id=stored.pk), {name: "a\x00b"})
    assert response.status_code == 200


def test_a_non_ascii_digit_session_filter_is_named_and_ignored(
    viewer_client: Client, stored: Session
) -> None:
    response = _get(viewer_client, "/warnings/", {"session": "\u00b2"})
    assert response.status_code == 200
    assert "session: &#x27;²&#x27; is not an id (ignored)" in response.content.decode()


@pytest.mark.parametrize(
    "title",
    [
        "=1+1",
        "+1",
        "-1",
        "@SUM(A1)",
        "\t=1",
        "\r=1",
        "\n=1",
        " =1",
        "\u3000=1",
        "\uff1d1+1",
        "\uff0b1",
        "\uff0d1",
        "\uff20x",
    ],
)
def test_every_formula_start_is_defused_in_the_csv_export(
    viewer_client: Client, stored: Session, title: str
) -> None:
    Session.objects.filter(pk=stored.pk).update(title=title)
    response = viewer_client.get("/sessions/export.csv")
    (row,) = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert row["title"] == "'" + title
    assert csv_safe("Task 1") == "Task 1"


PARAMETERS: dict[str, tuple[str, ...]] = {
    "/sessions/": ("q", "source", "model", "client_version", "from", "to", "warnings", "hit_min", "hit_max",
                   "min_tokens", "sort", "after", "before"),
    "/sessions/export.csv": ("q", "source", "model", "from", "to", "hit_min", "min_tokens", "sort"),
    "/sessions/export.json": ("q", "source", "from", "to", "hit_max", "sort"),
    "/requests/": ("model", "client_version", "page"),
    "/warnings/": ("kind", "source", "session", "page"),
    "/sessions/{id}/": ("type", "page", "requests_page"),
    "/sessions/{id}/events/": ("type", "page"),
    "/ingest/": ("page",),
    "/projections/": ("page",),
}  # fmt: skip

hostile_text = st.text(st.characters(codec=None, categories=None), max_size=40)
huge_dates = st.builds(
    lambda y, m, d, tz: f"{y:04d}-{m:02d}-{d:02d}{tz}",
    st.integers(0, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.sampled_from(["", "T23:59:00-05:00", "T00:00+14:00"]),
)
forged_cursors = st.builds(
    lambda kind, value, pk: _cursor([kind, value, pk]),
    st.sampled_from(["t", "v", "x"]),
    st.one_of(
        hostile_text,
        st.integers(),
        st.floats(),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=2),
    ),
    st.one_of(st.integers(), hostile_text, st.none()),
)
numbers = st.one_of(st.integers(), st.floats()).map(str)
values = st.one_of(hostile_text, huge_dates, forged_cursors, numbers, st.binary(max_size=20))
targets = st.sampled_from([(path, name) for path, names in PARAMETERS.items() for name in names])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=targets, value=values, htmx=st.booleans())
def test_no_generated_value_of_any_parameter_gives_a_server_error(
    viewer_client: Client, stored: Session, target: tuple[str, str], value: str | bytes, htmx: bool
) -> None:
    path, name = target
    headers = {"HX-Request": "true"} if htmx else {}
    query = f"{name}={quote(value if isinstance(value, bytes) else value.encode('utf-8', 'surrogatepass'))}"
    response = viewer_client.get(f"{path.format(id=stored.pk)}?{query}", headers=headers)
    if response.streaming:
        b"".join(response.streaming_content)
    assert response.status_code < 500


def test_the_stored_fixture_has_rows_for_every_filter(stored: Session) -> None:
    assert Source.objects.filter(name="farm").exists()
    assert stored.requests.exists()
    assert stored.warnings.exists()


def test_both_lists_read_a_time_without_a_zone_in_the_dashboards_zone(settings: Any) -> None:
    from datetime import UTC, datetime

    from django.http import QueryDict

    from dashboard.requests.listing import RequestFilters
    from dashboard.sessions.listing import SessionFilters

    settings.TIME_ZONE = "Europe/Paris"
    params = QueryDict("since=2026-01-31T09:00&until=2026-01-31T10:00Z")
    sessions, requests = SessionFilters.from_query(params), RequestFilters.from_query(params)
    nine_in_paris = datetime(2026, 1, 31, 8, 0, tzinfo=UTC)
    assert (sessions.since, requests.since) == (nine_in_paris, nine_in_paris)
    assert sessions.until == requests.until == datetime(2026, 1, 31, 10, 0, tzinfo=UTC)
