"""The pages that show what the misses cost and what a fix would save: the session's "What would
fix this" panel, the request page's cost and miss cost, the overview's KPIs, the inbox's misses and
the savings page; and that they agree on one miss."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.db.models import Max, Sum
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.ingest.files import ingest_paths
from dashboard.models import ModelPrice, Request, RequestAnalysis, ScenarioSaving, Session, SessionSavings
from dashboard.savings.refresh import session_savings_refresh
from dashboard.web.money import usd
from tests.dashboard.logs import capture_line, write_jsonl
from tests.projections.cache.whatif.sessions import idle_session

pytestmark = pytest.mark.django_db


def section(html: str, element_id: str) -> str:
    """The HTML of the element with ``element_id`` up to the end of its section."""
    return html.split(f'id="{element_id}"', 1)[1].split("</section>", 1)[0]


def miss_total(session: Session) -> Decimal:
    total = RequestAnalysis.objects.filter(session=session).aggregate(total=Sum("miss_cost"))["total"]
    assert total is not None
    assert total > 0
    return Decimal(total)


# --- the session page ----------------------------------------------------------------------------


def test_the_session_panel_ranks_the_scenarios_by_what_they_would_save(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    kept = SessionSavings.objects.get(session=session)

    panel = section(viewer_client.get(session.get_absolute_url()).content.decode(), "session-fixes")

    ranked = re.findall(r'<tr data-scenario="([^"]+)">', panel)
    savings = {r["scenario"]: r["saving_usd"] for r in kept.results if r["supported"]}
    assert ranked[0] in {"best", "stable-prefix"}
    assert [savings[name] for name in ranked] == sorted((savings[name] for name in ranked), reverse=True)
    assert "as-recorded" not in ranked
    stable = panel.split('<tr data-scenario="stable-prefix">', 1)[1].split("</tr>", 1)[0]
    assert usd(kept.best_saving) in stable
    stable_result = next(r for r in kept.results if r["scenario"] == "stable-prefix")
    assert f"{stable_result['touched_requests']} of {stable_result['requests']}" in stable
    assert stable_result["change"].split()[0] in stable


def test_the_session_panel_shows_the_rules_error_against_the_reported_usage_beside_the_savings(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    kept = SessionSavings.objects.get(session=session)
    assert kept.recorded_cost is not None
    assert kept.reported_cost is not None
    html = viewer_client.get(session.get_absolute_url()).content.decode()

    # The saving is against the rules' cost as recorded; the reported cost, the session's own
    # figure, and how far the rules are from it stand beside it.
    panel = section(html, "session-fixes")
    assert f"as recorded by the same rules, {usd(kept.recorded_cost)}" in panel
    error = kept.recorded_cost - kept.reported_cost
    said = panel.split('id="rules-error">', 1)[1].split("</span>", 1)[0]
    assert f"reported, the requests cost {usd(kept.reported_cost)}" in said
    if error == 0:
        assert "the rules are exact here" in said
    else:
        assert f"{usd(abs(error))} {'higher' if error > 0 else 'lower'}" in said


def test_the_session_panel_links_the_requests_a_scenario_touches_by_their_miss_cause(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    touched = ScenarioSaving.objects.get(
        session=session, scenario="stable-prefix", cause="prefix-changed@system"
    )
    assert touched.touched > 0

    panel = section(viewer_client.get(session.get_absolute_url()).content.decode(), "session-fixes")

    stable = panel.split('<tr data-scenario="stable-prefix">', 1)[1].split("</tr>", 1)[0]
    link = re.search(r'href="([^"]+)"[^>]*>' + str(touched.touched) + r" prefix-changed@system</a>", stable)
    assert link is not None
    listed = viewer_client.get(link.group(1).replace("&amp;", "&")).context["page"].paginator.count
    assert listed == touched.touched


def test_the_session_panel_gives_the_reason_of_each_scenario_it_cannot_price(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    unsupported = [r for r in SessionSavings.objects.get(session=session).results if not r["supported"]]
    assert unsupported  # an Anthropic session has no prompt_cache_key to make stable

    panel = section(viewer_client.get(session.get_absolute_url()).content.decode(), "session-fixes")

    for result in unsupported:
        item = panel.split(f'<li data-scenario="{result["scenario"]}">', 1)[1].split("</li>", 1)[0]
        assert result["reason"][:40].replace("'", "&#x27;") in item


def test_the_session_page_names_what_the_misses_cost_and_none_of_the_near_synonyms(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")

    html = viewer_client.get(session.get_absolute_url()).content.decode()

    figure = html.split('id="session-miss-cost"', 1)[1].split("</div>", 1)[0]
    assert f">{usd(miss_total(session))}</span>" in figure
    for synonym in ("Wasted cache writes", "Re-written", "Re-processed"):
        assert synonym not in html


# --- the request page ----------------------------------------------------------------------------


def test_the_request_page_shows_its_cost_and_miss_cost_from_its_stored_analysis(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    analysis = (
        RequestAnalysis.objects.filter(session=session, miss_cost__gt=0).select_related("request").first()
    )
    assert analysis is not None

    html = viewer_client.get(analysis.request.get_absolute_url()).content.decode()

    cost = html.split('id="request-cost"', 1)[1].split("</div>", 1)[0]
    miss = html.split('id="request-miss-cost"', 1)[1].split("</div>", 1)[0]
    assert f">{usd(analysis.cost)}</span>" in cost
    assert f">{usd(analysis.miss_cost)}</span>" in miss
    assert f'href="{session.get_absolute_url()}#session-fixes"' in html


def test_the_request_page_shows_what_each_fix_would_read_write_and_save_on_it(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    call = session.requests.get(ordinal=4)  # request 5: its clock line changed the system prompt

    html = viewer_client.get(call.get_absolute_url()).content.decode()

    table = section(html, "request-fixes")
    rows = dict(re.findall(r'<tr data-scenario="([^"]+)"[^>]*>(.*?)</tr>', table, re.S))

    def cells(name: str) -> list[str]:
        return [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", rows[name], re.S)
        ]

    # As recorded, request 5 wrote its whole prompt, T(5) = 11,700; with the clock moved after the
    # history it reads request 4's prompt, T(4) = 10,900, and writes the 800 its turn adds.
    recorded, stable = cells("as-recorded"), cells("stable-prefix")
    assert recorded[1:5] == ["0", "0", "11.7k", "0"]
    assert stable[1:5] == ["0", "10.9k", "800", "0"]
    kept = SessionSavings.objects.get(session=session).request_tokens
    recorded_cost = (
        Decimal(kept["as-recorded"][call.key][2]) * Decimal("3.75") / 1_000_000
        + Decimal(200 * 15) / 1_000_000
    )
    stable_tokens = kept["stable-prefix"][call.key]
    stable_cost = (
        Decimal(stable_tokens[1]) * Decimal("0.30") + Decimal(stable_tokens[2]) * Decimal("3.75") + 200 * 15
    ) / 1_000_000
    assert recorded[5] == usd(recorded_cost)
    assert stable[5:7] == [usd(stable_cost), usd(recorded_cost - stable_cost)]
    # The ttl-1h world changes nothing this request reads: it only writes at the dearer rate.
    assert "same usage" not in rows["ttl-1h"]
    assert "same usage" not in rows["stable-prefix"]
    assert f'href="{session.get_absolute_url()}#session-fixes"' in table

    # Request 1 has no predecessor to read: moving the clock leaves its usage as it was.
    first = section(
        viewer_client.get(session.requests.get(ordinal=0).get_absolute_url()).content.decode(),
        "request-fixes",
    )
    stable_first = first.split('<tr data-scenario="stable-prefix"', 1)[1].split("</tr>", 1)[0]
    assert "same usage" in stable_first


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        # Figures kept before figures per request were: they come back with the next analysis.
        ({"request_tokens": {}}, "made before figures per request were kept"),
        (
            {"error": "no price for model 'claude-x'", "request_tokens": {}},
            "no price for model &#x27;claude-x&#x27;",
        ),
        # An entry not of the shape the refresh writes is no figure, not a 500.
        ({"request_tokens": {"as-recorded": {"msg_5": ["ten", 0, 0, 0, 0]}}}, "did not take this request"),
    ],
    ids=["before-per-request", "session-error", "malformed"],
)
def test_a_request_without_fix_figures_says_why(
    ingested: Callable[..., Session], viewer_client: Client, change: dict[str, Any], reason: str
) -> None:
    session = ingested("clock")
    SessionSavings.objects.filter(session=session).update(**change)
    call = session.requests.get(ordinal=4)

    response = viewer_client.get(call.get_absolute_url())

    assert response.status_code == 200
    table = section(response.content.decode(), "request-fixes")
    assert reason in table.split('id="request-fixes-unavailable">', 1)[1].split("</p>", 1)[0]
    assert "<table" not in table


def test_a_request_page_reads_its_own_fix_figures_in_one_query(
    ingested: Callable[..., Session], django_assert_max_num_queries: Any
) -> None:
    from dashboard.savings.request_fixes import request_fixes

    session = ingested("clock")
    call = session.requests.get(ordinal=4)

    with django_assert_max_num_queries(2):  # the figures, and the price table
        fixes = request_fixes(call)

    assert fixes.recorded is not None
    assert {fix.scenario for fix in fixes.fixes} >= {"stable-prefix", "ttl-1h", "best"}


def test_a_request_not_yet_analysed_shows_no_cost_rather_than_0(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    call = session.requests.order_by("ordinal").first()
    assert call is not None
    RequestAnalysis.objects.filter(request=call).delete()

    html = viewer_client.get(call.get_absolute_url()).content.decode()

    miss = html.split('id="request-miss-cost"', 1)[1].split("</div>", 1)[0]
    assert 'title="not analysed yet">—</span>' in miss


# --- the overview --------------------------------------------------------------------------------


def kpi(html: str, element_id: str) -> str:
    """The shown value of the overview's figure ``element_id``."""
    figure = html.split(f'id="{element_id}"', 1)[1].split("</div>", 1)[0]
    return re.sub(r"<[^>]+>", "", figure.split('class="value"', 1)[1].split(">", 1)[1])


def test_the_overview_shows_what_misses_cost_and_what_the_best_fix_would_save_in_the_range(
    ingested: Callable[..., Session], viewer_client: Client, wall_clock: Callable[[datetime], None]
) -> None:
    clock, idle = ingested("clock"), ingested("idle")
    # Ranges count back from now: "now" is the hour after the sessions' newest request.
    newest = Request.objects.aggregate(newest=Max("started_at"))["newest"]
    wall_clock(newest + timedelta(hours=1))
    lost = miss_total(clock) + miss_total(idle)
    best = sum(SessionSavings.objects.get(session=s).best_saving or 0 for s in (clock, idle))

    for chosen in ("30d", "all"):
        html = viewer_client.get("/", {"range": chosen}).content.decode()
        assert kpi(html, "kpi-lost") == usd(lost)
        assert kpi(html, "kpi-best-fix") == usd(best)


def test_the_overview_of_an_empty_fleet_shows_its_money_as_unknown(viewer_client: Client) -> None:
    html = viewer_client.get("/").content.decode()

    assert kpi(html, "kpi-lost") == "—"
    assert kpi(html, "kpi-best-fix") == "—"


# --- the warnings inbox --------------------------------------------------------------------------


def test_the_inbox_ranks_the_misses_by_what_they_cost_beside_the_self_checks(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    clock, idle = ingested("clock"), ingested("idle")
    expected = list(
        RequestAnalysis.objects.filter(miss_cost__gt=0)
        .order_by("-miss_cost", "-request_id")
        .values_list("request_id", "miss_cost")
    )
    assert {clock.pk, idle.pk} == set(
        RequestAnalysis.objects.filter(miss_cost__gt=0).values_list("session_id", flat=True)
    )

    html = viewer_client.get(reverse("dashboard:warnings")).content.decode()

    misses = section(html, "inbox-misses")
    rows = re.findall(r'<tr data-request="(\d+)">(.*?)</tr>', misses, flags=re.S)
    assert [int(pk) for pk, _ in rows] == [pk for pk, _ in expected]
    assert [re.findall(r'<td class="num">([^<]*)</td>', row)[-1] for _, row in rows] == [
        usd(cost) for _, cost in expected
    ]
    assert 'id="warning-groups"' in html


def test_the_inbox_lists_only_the_misses_of_the_source_filtered(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    ingested("clock")

    html = viewer_client.get(reverse("dashboard:warnings"), {"source": "elsewhere"}).content.decode()

    assert 'id="inbox-misses"' not in html


# --- the savings page ----------------------------------------------------------------------------


def test_the_savings_page_ranks_causes_models_and_sources_by_what_the_best_fix_would_save(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    clock, idle = ingested("clock"), ingested("idle")
    rows = ScenarioSaving.objects.filter(scenario="best")

    html = viewer_client.get(reverse("dashboard:savings"), {"range": "all"}).content.decode()

    causes = section(html, "savings-cause")
    shown = re.findall(r'<tr data-name="([^"]*)">', causes)
    by_cause = {c: Decimal(0) for c in shown}
    for cause, saving in rows.values_list("cause", "saving"):
        by_cause[cause] += saving
    assert shown == sorted(by_cause, key=lambda c: (-by_cause[c], c))
    source = section(html, "savings-source")
    assert '<tr data-name="laptop">' in source
    total = sum(SessionSavings.objects.get(session=s).best_saving or 0 for s in (clock, idle))
    assert f'<td class="num">{usd(total)}</td>' in source.split('<tr data-name="laptop">', 1)[1]
    assert 'data-name="claude-sonnet-4-5-20250929"' in section(html, "savings-model")
    assert "savings-client_version" in html


def test_the_savings_page_shows_figures_made_again_on_its_next_view(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    clock = ingested("clock")

    def laptop_saving() -> str:
        html = viewer_client.get(reverse("dashboard:savings"), {"range": "all"}).content.decode()
        row = section(html, "savings-source").split('<tr data-name="laptop">', 1)[1].split("</tr>", 1)[0]
        return re.findall(r'<td class="num">([^<]*)</td>', row)[0]

    before = SessionSavings.objects.get(session=clock).best_saving
    assert before is not None
    assert laptop_saving() == usd(before)  # read, and kept for the next views
    with CaptureQueriesContext(connection) as kept:
        assert laptop_saving() == usd(before)
    assert not any("dashboard_scenariosaving" in query["sql"] for query in kept.captured_queries)

    # Dearer writes make the clock's rewrites dearer, so moving the clock saves more; the range,
    # the sessions and their requests stay as they were.
    price = ModelPrice.objects.get(pattern="claude-sonnet-4-5")
    price.cache_write_5m *= 2
    price.save()
    assert session_savings_refresh(session_id=clock.pk)

    after = SessionSavings.objects.get(session=clock).best_saving
    assert after is not None
    assert after > before
    assert laptop_saving() == usd(after)


def test_a_savings_row_drills_down_to_the_sessions_behind_it(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    clock, idle = ingested("clock"), ingested("idle")
    cause = "prefix-changed@system"
    behind = {r.session_id for r in ScenarioSaving.objects.filter(scenario="best", cause=cause, saving__gt=0)}
    assert behind == {clock.pk}

    html = viewer_client.get(
        reverse("dashboard:savings"), {"range": "all", "by": "cause", "name": cause}
    ).content.decode()

    drilled = section(html, "savings-sessions")
    assert [int(pk) for pk in re.findall(r'<tr data-session="(\d+)">', drilled)] == [clock.pk]
    assert f'href="{clock.get_absolute_url()}#session-fixes"' in drilled
    assert idle.pk not in behind


def test_the_savings_export_gives_the_rankings_as_csv_and_json(
    ingested: Callable[..., Session], viewer_client: Client
) -> None:
    session = ingested("clock")
    url = reverse("dashboard:savings_export", args=["json"])

    rows = json.loads(b"".join(viewer_client.get(url, {"range": "all"}).streaming_content))
    csv_text = b"".join(
        viewer_client.get(
            reverse("dashboard:savings_export", args=["csv"]), {"range": "all"}
        ).streaming_content
    ).decode()

    source = next(row for row in rows if row["by"] == "source")
    assert (source["name"], source["scenario"], source["sessions"]) == ("laptop", "best", 1)
    assert Decimal(source["saving_usd"]) == SessionSavings.objects.get(session=session).best_saving
    assert {row["by"] for row in rows} == {"source", "client_version", "model", "cause"}
    assert csv_text.splitlines()[0] == "by,name,scenario,sessions,requests,recorded_cost_usd,saving_usd"
    assert len(csv_text.splitlines()) == len(rows) + 1


def test_the_savings_page_names_an_unknown_scenario_and_shows_the_best(viewer_client: Client) -> None:
    response = viewer_client.get(reverse("dashboard:savings"), {"scenario": "faster"})

    assert response.status_code == 400
    assert "no scenario &#x27;faster&#x27;" in response.content.decode()
    assert response.context["query"].scenario == "best"
    assert (
        viewer_client.get(reverse("dashboard:savings_export", args=["csv"]), {"by": "x"}).status_code == 400
    )


def test_the_savings_page_and_its_export_need_a_login(client: Client) -> None:
    for url in (reverse("dashboard:savings"), reverse("dashboard:savings_export", args=["json"])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_navigation_links_the_savings_page(viewer_client: Client) -> None:
    html = viewer_client.get(reverse("dashboard:savings")).content.decode()

    assert f'<a href="{reverse("dashboard:savings")}" aria-current="page">Savings</a>' in html


# --- one miss, one figure ------------------------------------------------------------------------


def test_the_money_figures_agree_on_one_miss_across_request_session_inbox_and_overview(
    tmp_path: Path, django_capture_on_commit_callbacks: Any, viewer_client: Client
) -> None:
    # Three requests a minute apart, then one after ten minutes idle: its 5-minute entry expired,
    # so it writes again at 1.25x what it would have read at 0.1x. That one miss is the fleet's.
    records = idle_session()[:4]
    path = write_jsonl(tmp_path / "idle.jsonl", [capture_line(r) for r in records])
    with django_capture_on_commit_callbacks(execute=True):
        assert not ingest_paths(paths=[path], source_name="laptop", format="anthropic-capture").errors
    session = Session.objects.get(external_id="idle")
    (miss,) = RequestAnalysis.objects.filter(miss_cost__gt=0).select_related("request")
    # By the rules: request 3's 10,100 cached tokens written again at $3.75 a million, not read at $0.30.
    assert miss.miss_cost == Decimal(10_100) * (Decimal("3.75") - Decimal("0.30")) / 1_000_000
    shown = usd(miss.miss_cost)

    request_page = viewer_client.get(miss.request.get_absolute_url()).content.decode()
    session_page = viewer_client.get(session.get_absolute_url()).content.decode()
    inbox = viewer_client.get(reverse("dashboard:warnings")).content.decode()
    overview = viewer_client.get("/", {"range": "all"}).content.decode()

    assert kpi(request_page, "request-miss-cost") == shown
    assert kpi(session_page, "session-miss-cost") == shown
    inbox_row = section(inbox, "inbox-misses").split(f'<tr data-request="{miss.request_id}">', 1)[1]
    assert re.findall(r'<td class="num">([^<]*)</td>', inbox_row.split("</tr>", 1)[0])[-1] == shown
    assert kpi(overview, "kpi-lost") == shown


def test_a_saving_that_costs_more_reads_as_minus_dollars() -> None:
    assert (usd(Decimal("-0.272")), usd(Decimal("0.272")), usd(Decimal("-12.5"))) == (
        "-$0.272",
        "$0.272",
        "-$12.50",
    )
