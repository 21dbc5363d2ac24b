"""The requests list as a tool: every filter and sort in the URL, bad values named, pages that keep
the filters, and exports that hold exactly the filtered list."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.models import Request, RequestAnalysis, Session, Source
from dashboard.requests.views import REQUESTS_PER_PAGE
from projections.cache.explain.verdict import label_meaning
from tests.dashboard.test_analysis import conversation, ingest_captures

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 2, 1, tzinfo=UTC)
LABELS = ["", "prefix-changed@messages:4", "ttl-expired", "prefix-changed@system:0", ""]
CAUSES = ["", "edited", "", "system-changed", ""]
URL = reverse("dashboard:requests")


def fleet(count: int, *, analysed: bool = True) -> list[Request]:
    """``count`` requests over two sources, sessions and models, an hour apart; every fifth one
    (ordinal 4 of its session) is not analysed."""
    sources = [Source.objects.get_or_create(name=name)[0] for name in ("farm", "laptop")]
    sessions = [
        Session.objects.create(source=sources[n % 2], external_id=f"s{n}", format="dsh") for n in range(3)
    ]
    calls = []
    for n in range(count):
        session = sessions[n % 3]
        call = Request.objects.create(
            session=session,
            ordinal=n,
            key=f"k{n}",
            provider="anthropic",
            model="opus" if n % 2 else "sonnet",
            started_at=T0 + timedelta(hours=n),
            uncached_input_tokens=(n * 37) % 101,
            cache_read_tokens=1_000 + (n * 53) % 997,
            cache_write_5m_tokens=(n * 11) % 89,
            output_tokens=10,
        )
        if analysed and n % 5 != 4:
            RequestAnalysis.objects.create(
                request=call,
                session=session,
                label=LABELS[n % 5],
                cause=CAUSES[n % 5],
                predicted_read=1_000 + (n * 7) % 50,
                predicted_write=(n * 3) % 40,
                wasted_tokens=(n * 131) % 1_009,
                cost=Decimal((n * 17) % 23) / 1000,
            )
        calls.append(call)
    return calls


def keys(response: Any) -> list[str]:
    return [call.key for call in response.context["page"]]


def every_key(client: Client, params: dict[str, str]) -> list[str]:
    """The keys of every page of the list, page after page."""
    seen: list[str] = []
    number = 1
    while True:
        response = client.get(URL, {**params, "page": number})
        seen += keys(response)
        if not response.context["page"].has_next():
            return seen
        number += 1


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"source": "laptop"}, lambda c: c.session.source.name == "laptop"),
        ({"model": "opus"}, lambda c: c.model == "opus"),
        ({"session": "s2"}, lambda c: c.session.external_id == "s2"),
        ({"label": "prefix-changed"}, lambda c: c.ordinal % 5 in (1, 3)),
        ({"label": "ttl-expired"}, lambda c: c.ordinal % 5 == 2),
        ({"cause": "edited"}, lambda c: c.ordinal % 5 == 1),
        ({"min_wasted": "500"}, lambda c: c.ordinal % 5 != 4 and (c.ordinal * 131) % 1_009 >= 500),
        ({"since": "2026-02-01T05:00"}, lambda c: c.ordinal >= 5),
        ({"until": "2026-02-01T05:00:00+00:00"}, lambda c: c.ordinal < 5),
        ({"since": "2026-02-01T03:00Z", "until": "2026-02-01T06:00Z"}, lambda c: 3 <= c.ordinal < 6),
        # Sessions s0 and s2 are the farm's.
        (
            {"label": "prefix-changed", "source": "farm"},
            lambda c: c.ordinal % 5 in (1, 3) and c.ordinal % 3 != 1,
        ),
    ],
)
def test_each_filter_narrows_the_list(viewer_client: Client, params: dict[str, str], expected: Any) -> None:
    calls = fleet(20)
    response = viewer_client.get(URL, params)
    assert response.status_code == 200
    assert sorted(keys(response)) == sorted(c.key for c in calls if expected(c))
    assert keys(response), "each case selects something"
    assert "matching these filters" in response.content.decode()


def test_a_session_is_found_by_its_dashboard_id_too(viewer_client: Client) -> None:
    calls = fleet(6)
    session = calls[1].session
    assert sorted(keys(viewer_client.get(URL, {"session": str(session.pk)}))) == ["k1", "k4"]


SORTS: dict[str, Any] = {
    "started": lambda c: c.started_at,
    "uncached": lambda c: c.uncached_input_tokens,
    "read": lambda c: c.cache_read_tokens,
    "wasted": lambda c: None if c.ordinal % 5 == 4 else (c.ordinal * 131) % 1_009,
    "cost": lambda c: None if c.ordinal % 5 == 4 else Decimal((c.ordinal * 17) % 23) / 1000,
}


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("key", sorted(SORTS))
def test_each_sort_orders_the_requests_that_have_the_figure(
    viewer_client: Client, key: str, descending: bool
) -> None:
    calls = fleet(20)
    value = SORTS[key]
    # The id breaks ties, in the direction of the sort; a request not analysed has no waste or cost.
    known = sorted(
        (c for c in calls if value(c) is not None), key=lambda c: (value(c), c.pk), reverse=descending
    )
    sort = f"-{key}" if descending else key
    response = viewer_client.get(URL, {"sort": sort})
    assert keys(response) == [c.key for c in known]
    state = "descending" if descending else "ascending"
    assert f'aria-sort="{state}"' in response.content.decode()


def test_a_request_without_a_reported_figure_is_left_out_of_that_sort_only(viewer_client: Client) -> None:
    fleet(5)
    Request.objects.filter(key="k2").update(uncached_input_tokens=None)
    assert "k2" not in keys(viewer_client.get(URL, {"sort": "-uncached"}))
    assert "k2" in keys(viewer_client.get(URL, {"sort": "-read"}))


def test_a_list_past_the_cap_says_so_and_pages_through_the_first_matches(
    viewer_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dashboard.requests.views.LISTED_REQUESTS_CAP", 150)
    fleet(2 * REQUESTS_PER_PAGE)
    response = viewer_client.get(URL, {"page": "9"})
    page = response.content.decode()
    assert "More than 150 requests; the pages hold the first 150" in page
    assert response.context["page"].number == 2
    assert len(keys(response)) == 50
    rows = export(viewer_client, "json", {})
    assert len(rows) == 2 * REQUESTS_PER_PAGE  # the export holds every match


def test_the_default_order_is_newest_first(viewer_client: Client) -> None:
    fleet(5)
    assert keys(viewer_client.get(URL)) == ["k4", "k3", "k2", "k1", "k0"]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"min_wasted": "abc"}, "min_wasted: 'abc' is not a whole number of tokens"),
        ({"min_wasted": "-5"}, "min_wasted: '-5' is not a whole number of tokens"),
        ({"sort": "bogus"}, "sort: 'bogus' is not one of"),
        ({"label": "broken-ish"}, "label: 'broken-ish' is not one of"),
        ({"cause": "gremlins"}, "cause: 'gremlins' is not one of"),
        ({"since": "yesterday"}, "since: 'yesterday' is not a time like"),
        ({"until": "2026-13-01"}, "until: '2026-13-01' is not a time like"),
        ({"session": "a\x00b"}, "session: contains a NUL"),
    ],
)
def test_a_bad_filter_value_is_named_on_the_page_and_ignored(
    viewer_client: Client, params: dict[str, str], named: str
) -> None:
    fleet(5)
    response = viewer_client.get(URL, params)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'class="errorlist"' in page
    assert named.replace("'", "&#x27;") in page
    assert keys(response) == ["k4", "k3", "k2", "k1", "k0"]  # the whole list, newest first


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_with_a_bad_filter_value_is_refused_with_the_reason(
    viewer_client: Client, fmt: str
) -> None:
    fleet(5)
    response = viewer_client.get(reverse("dashboard:requests_export", args=[fmt]), {"min_wasted": "abc"})
    assert response.status_code == 400
    assert response.content.decode() == (
        "bad filter, nothing exported: min_wasted: 'abc' is not a whole number of tokens\n"
    )


def test_the_filtered_list_is_paged_and_its_pages_keep_the_filters(viewer_client: Client) -> None:
    fleet(3 * REQUESTS_PER_PAGE)
    params = {"source": "farm", "sort": "-wasted"}
    first = viewer_client.get(URL, params)
    page = first.content.decode()
    assert 'href="?source=farm&amp;sort=-wasted&amp;page=2"' in page
    walked = every_key(viewer_client, params)
    analysed = Request.objects.filter(session__source__name="farm", analysis__isnull=False)
    assert len(walked) == len(set(walked)) == analysed.count()


def test_a_sort_header_keeps_the_filters_and_starts_again_at_page_one(viewer_client: Client) -> None:
    fleet(2 * REQUESTS_PER_PAGE)
    page = viewer_client.get(URL, {"label": "ttl-expired", "page": "2"}).content.decode()
    assert 'href="?label=ttl-expired&amp;sort=-wasted"' in page
    assert 'hx-target="#request-table"' in page


def export(client: Client, fmt: str, params: dict[str, str]) -> list[dict[str, Any]]:
    response = client.get(reverse("dashboard:requests_export", args=[fmt]), params)
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    if fmt == "csv":
        assert response["Content-Type"].startswith("text/csv")
        return list(csv.DictReader(io.StringIO(body)))
    assert response["Content-Type"] == "application/json"
    return list(json.loads(body))


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_holds_exactly_the_filtered_list_in_its_order(viewer_client: Client, fmt: str) -> None:
    fleet(3 * REQUESTS_PER_PAGE)
    params = {"source": "farm", "min_wasted": "100", "sort": "-cost"}
    rows = export(viewer_client, fmt, params)
    listed = every_key(viewer_client, params)
    assert len(listed) > REQUESTS_PER_PAGE  # more than one page of the list
    by_key = {c.pk: c.key for c in Request.objects.all()}
    assert [by_key[int(row["request_id"])] for row in rows] == listed


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_row_carries_the_label_cause_figures_and_cost(viewer_client: Client, fmt: str) -> None:
    fleet(5)
    rows = export(viewer_client, fmt, {"cause": "edited"})
    assert len(rows) == 1
    row = {key: str(value) for key, value in rows[0].items()}
    assert row["label"] == "prefix-changed@messages:4"
    assert (row["cause"], row["session_id"], row["source"]) == ("edited", "s1", "laptop")
    assert (row["model"], row["cache_read_tokens"], row["predicted_read_tokens"]) == ("opus", "1053", "1007")
    assert row["reprocessed_tokens"] == "131"
    assert "wasted_tokens" not in row  # the session's wasted writes are another figure
    assert row["cost_usd"] == "0.017"
    if fmt == "json":
        assert rows[0]["cost_usd"] == 0.017  # a number, as every other figure, not a string


def test_the_list_names_its_figure_re_processed_not_wasted_and_links_the_glossary(
    viewer_client: Client,
) -> None:
    fleet(5)
    page = viewer_client.get(URL, {"sort": "-wasted"}).content.decode()
    assert f'href="{reverse("dashboard:glossary")}#re-processed"' in page
    assert "Re-processed tokens</a> ≥" in page
    assert "Re-processed ▼</a></th>" in page
    assert "Wasted" not in page  # the session page's wasted writes count something else
    assert 'title="131"' in page  # the figure itself, still read from the wasted_tokens column


def test_a_cost_of_a_fraction_of_a_cent_reads_as_a_plain_decimal(viewer_client: Client) -> None:
    fleet(5)
    RequestAnalysis.objects.filter(request__key="k1").update(cost=Decimal("0.000081"))
    page = viewer_client.get(URL, {"sort": "cost"}).content.decode()
    assert "$0.000081" in page
    assert "e-05" not in page


def test_an_export_of_an_unknown_format_is_not_found(viewer_client: Client) -> None:
    assert viewer_client.get(reverse("dashboard:requests_export", args=["xml"])).status_code == 404


def test_an_unanalysed_request_shows_no_label_rather_than_no_miss(viewer_client: Client) -> None:
    fleet(5, analysed=False)
    page = viewer_client.get(URL).content.decode()
    assert page.count('title="not analysed yet"') == 5


def test_the_list_answers_htmx_with_its_table_alone_and_the_filters_in_it(viewer_client: Client) -> None:
    fleet(5)
    response = viewer_client.get(URL, {"label": "ttl-expired"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="request-table"')
    assert keys(response) == ["k2"]
    assert 'href="/requests/export.csv?label=ttl-expired"' in body


def test_the_page_needs_a_login() -> None:
    response = Client().get(URL)
    assert response.status_code == 302
    assert Client().get(reverse("dashboard:requests_export", args=["csv"])).status_code == 302


def queries_of(client: Client, params: dict[str, str]) -> int:
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(URL, params)
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("params", [{}, {"label": "prefix-changed", "sort": "-wasted", "min_wasted": "1"}])
def test_a_page_of_a_hundred_requests_takes_as_many_queries_as_one_of_five(
    viewer_client: Client, params: dict[str, str]
) -> None:
    fleet(5)
    few = queries_of(viewer_client, params)
    Session.objects.all().delete()
    fleet(2 * REQUESTS_PER_PAGE)
    assert queries_of(viewer_client, params) == few


def test_the_session_request_table_shows_each_request_s_cause(viewer_client: Client, tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)

    page = viewer_client.get(session.get_absolute_url()).content.decode()
    table = page[page.index('<section class="card" id="requests">') :]
    assert "<th>Cause</th>" in table
    link = f'href="{URL}?session={session.pk}&amp;cause=edited"'
    assert table.count(link) == 1  # only the third request changed its prompt
    listed = viewer_client.get(URL, {"session": str(session.pk), "cause": "edited"})
    assert keys(listed) == ["msg_3"]


def test_the_session_request_table_shows_the_miss_label_where_no_change_names_a_cause(
    viewer_client: Client,
) -> None:
    fleet(5)
    labelled = Request.objects.get(key="k3")  # no cause: a usage-only log names no first change
    RequestAnalysis.objects.filter(request=labelled).update(label="prefix-changed@messages", cause="")
    page = viewer_client.get(labelled.session.get_absolute_url()).content.decode()
    table = page[page.index('<section class="card" id="requests">') :]
    meaning = escape(label_meaning("prefix-changed@messages"))
    assert f'<span title="{meaning}">prefix-changed@messages</span>' in table
    assert "system-changed" not in table


def test_a_deep_page_holds_its_rows_in_order_with_their_analysis(viewer_client: Client) -> None:
    calls = fleet(3 * REQUESTS_PER_PAGE)
    response = viewer_client.get(URL, {"page": "3", "sort": "-wasted"})
    analysed = sorted(
        (c for c in calls if hasattr(c, "analysis")),
        key=lambda c: (c.analysis.wasted_tokens, c.pk),
        reverse=True,
    )
    assert keys(response) == [c.key for c in analysed[2 * REQUESTS_PER_PAGE : 3 * REQUESTS_PER_PAGE]]
    for row in response.context["page"]:
        analysis = RequestAnalysis.objects.get(request_id=row.pk)
        assert (row.miss_label, row.reprocessed_tokens, row.cost) == (
            analysis.label,
            analysis.wasted_tokens,
            analysis.cost,
        )
        assert row.session.source.name in ("farm", "laptop")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_export_says_first_how_many_rows_it_holds_and_holds_that_many_while_ingests_go_on(
    viewer_client: Client, fmt: str
) -> None:
    stored = fleet(7)
    response = viewer_client.get(reverse("dashboard:requests_export", args=[fmt]), {"source": "farm"})
    announced = int(response["X-Cachescope-Rows"])
    # A request stored while the download is under way is not in it: the count stays true.
    Request.objects.create(session=stored[0].session, ordinal=99, key="late", provider="anthropic")

    body = b"".join(response.streaming_content).decode()

    rows = list(csv.DictReader(io.StringIO(body))) if fmt == "csv" else json.loads(body)
    farm = Request.objects.filter(session__source__name="farm").exclude(key="late")
    assert announced == len(rows) == farm.count()
    assert Request.objects.get(key="late").pk not in {int(row["request_id"]) for row in rows}
    if fmt == "json":
        with pytest.raises(json.JSONDecodeError):  # a cut JSON download does not even parse
            json.loads(body[: len(body) // 2])
