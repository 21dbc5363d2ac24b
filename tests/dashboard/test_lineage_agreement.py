"""The request page, the session's request table, costs, the context chart and ``explain --json``
name the same lineage for each request: the one the analysis decided from the bodies."""

from __future__ import annotations

import importlib
import json
from datetime import date, timedelta
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.costs.ledger import session_cost_compute
from dashboard.costs.pricing import session_calls_load
from dashboard.ingest.files import ingest_paths
from dashboard.models import ModelPrice, Request, Session
from dashboard.sessions.breakdown_series import session_breakdown_series, session_request_figures
from tests.dashboard.test_analysis import START, body, capture, ingest_captures, text

HAIKU = "claude-3-5-haiku-20241022"
SUBAGENT_SYSTEM = "You are a subagent that searches the code base. " * 150
EXPECTED = {
    "msg_1": "main",
    "msg_title": "side",
    "msg_2": "main",
    "msg_quota": "side-2",
    "msg_sub_1": "subagent",
    "msg_sub_2": "subagent",
    "msg_3": "main",
}


def user(value: str, *, marked: bool = False) -> dict[str, Any]:
    return {"role": "user", "content": [text(value, marked=marked)]}


def assistant(value: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(value)]}


def side_call(system: str, question: str, key: str, seconds: int) -> dict[str, Any]:
    """A one-shot call on a small model without tools, as a client's title or quota probe."""
    request = {"model": HAIKU, "max_tokens": 64, "system": [text(system)], "messages": [user(question)]}
    return capture(request, key=key, at=START + timedelta(seconds=seconds), read=0, write=0)


def session_records() -> list[dict[str, Any]]:
    """A main chain of three turns, a title and a quota side call between its turns, and a subagent
    of two turns with its own system prompt; the capture reader calls every one of them ``main``."""
    first = [user("Please read main.py", marked=True)]
    second = [
        user("Please read main.py"),
        assistant("It defines main()."),
        user("And tests.py?", marked=True),
    ]
    third = [*second[:2], user("And tests.py?"), assistant("It tests main()."), user("Thanks.", marked=True)]
    task = [user("Find every caller of main().", marked=True)]
    found = [user("Find every caller of main()."), assistant("Two callers."), user("Where?", marked=True)]

    def at(seconds: int) -> Any:
        return START + timedelta(seconds=seconds)

    return [
        capture(body(first), key="msg_1", at=at(0), read=0, write=1700),
        side_call("Write a title for the chat.", "The chat so far: read main.py", "msg_title", 5),
        capture(body(second), key="msg_2", at=at(30), read=1700, write=30),
        side_call("Answer in one word.", "quota", "msg_quota", 40),
        capture(body(task, system=SUBAGENT_SYSTEM), key="msg_sub_1", at=at(50), read=0, write=1800),
        capture(body(found, system=SUBAGENT_SYSTEM), key="msg_sub_2", at=at(55), read=1800, write=40),
        capture(body(third), key="msg_3", at=at(70), read=1730, write=150),
    ]


@pytest.fixture(autouse=True)
def _prices() -> None:
    """The prices of the sample's two models, as the seed migration gives them: a browser test's
    live server flushes the database, seed rows included, before later tests run."""
    for pattern, price in (
        ("claude-sonnet-4", ("3", "3.75", "6", "0.30", "15")),
        ("claude-3-5-haiku", ("0.80", "1", "1.6", "0.08", "4")),
    ):
        given, write_5m, write_1h, read, output = (Decimal(figure) for figure in price)
        ModelPrice.objects.get_or_create(
            pattern=pattern,
            defaults={
                "provider": "anthropic",
                "input": given,
                "cache_write_5m": write_5m,
                "cache_write_1h": write_1h,
                "cache_read": read,
                "output": output,
                "read_on": date(2026, 1, 1),
            },
        )


def analysed_session(tmp_path: Path) -> Session:
    session = ingest_captures(tmp_path, session_records())
    session_analyse(session_id=session.pk)
    return session


def requests_of(session: Session) -> list[Request]:
    return list(Request.objects.filter(session=session).order_by("ordinal"))


@pytest.mark.django_db
def test_before_the_analysis_every_reader_falls_back_to_the_importers_role(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, session_records())
    rows = requests_of(session)

    assert [row.chain for row in rows] == [""] * len(rows)
    assert [row.current_lineage for row in rows] == ["main"] * len(rows)
    assert [call.lineage for call in session_calls_load(session_ids=[session.pk])[session.pk]] == [
        "main"
    ] * len(rows)


@pytest.mark.django_db
def test_the_analysis_stores_the_lineage_it_decided_beside_the_importers_role(tmp_path: Path) -> None:
    rows = requests_of(analysed_session(tmp_path))

    assert {row.lineage for row in rows} == {"main"}  # the capture reader knows no lineages
    # Written only where the analysis departs from the importer's role: an UPDATE rewrites the row.
    assert {row.key: row.chain for row in rows} == {
        key: "" if chain == "main" else chain for key, chain in EXPECTED.items()
    }
    assert {row.key: row.current_lineage for row in rows} == EXPECTED


@pytest.mark.django_db
def test_the_request_page_and_the_session_table_name_the_analysis_lineage(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = analysed_session(tmp_path)
    table = viewer_client.get(session.get_absolute_url()).content.decode()

    for row in requests_of(session):
        page = viewer_client.get(row.get_absolute_url()).content.decode()
        assert f'<span class="lineage">{EXPECTED[row.key]}</span>' in page, row.key
    assert "<td>side-2</td>" in table
    assert "<td>subagent</td>" in table


@pytest.mark.django_db
def test_costs_take_each_request_in_the_lineage_the_analysis_gave_it(tmp_path: Path) -> None:
    session = analysed_session(tmp_path)
    rows = requests_of(session)
    calls = session_calls_load(session_ids=[session.pk])[session.pk]

    assert [call.lineage for call in calls] == [EXPECTED[row.key] for row in rows]
    # Each turn reads all its lineage's previous turn wrote, within five minutes: only the writes of
    # each lineage's last request are left unread. Grouped by the importer's role instead, the side
    # calls between turns would read nothing and every main write would count as wasted.
    last_of: dict[str, Request] = {EXPECTED[row.key]: row for row in rows}
    cost = session_cost_compute(session=session)
    assert cost.priced_requests == len(rows)
    assert cost.wasted_write_tokens == sum(row.cache_write_5m_tokens or 0 for row in last_of.values())


@pytest.mark.django_db
def test_the_context_chart_reads_the_analysis_lineage_and_leaves_out_every_side_call(tmp_path: Path) -> None:
    session = analysed_session(tmp_path)
    rows = requests_of(session)
    figures = session_request_figures(session=session)
    seqs = {point.seq for point in session_breakdown_series(session=session).points}

    for row in rows:
        assert row.event_seq is not None
        assert figures[row.event_seq].lineage == EXPECTED[row.key]
    side = {row.event_seq for row in rows if EXPECTED[row.key].startswith("side")}
    chained = {row.event_seq for row in rows} - side
    assert len(side) == 2
    assert not side & seqs
    assert chained <= seqs


@pytest.mark.django_db
def test_explain_json_names_the_lineage_the_pages_show(tmp_path: Path) -> None:
    session = analysed_session(tmp_path)
    out = StringIO()
    call_command("explain", str(tmp_path / "capture.jsonl"), "--json", stdout=out, stderr=StringIO())
    said = {row["number"]: row["lineage"] for row in json.loads(out.getvalue())}

    assert said == {row.number: row.current_lineage for row in requests_of(session)}
    assert sorted(said.values()) == sorted(EXPECTED.values())


@pytest.mark.django_db
def test_the_request_list_shows_and_filters_the_lineage_every_page_names(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = ingest_captures(tmp_path, session_records())
    url = reverse("dashboard:requests")
    before = viewer_client.get(url, {"lineage": "main"}).context["page"]
    assert before.paginator.count == len(EXPECTED)  # the importer's role until the analysis runs

    session_analyse(session_id=session.pk)
    quota = viewer_client.get(url, {"lineage": "side-2"})
    main = viewer_client.get(url, {"lineage": "main"}).context["page"]

    assert [call.key for call in quota.context["page"]] == ["msg_quota"]
    assert '<td class="small wide">side-2</td>' in quota.content.decode()
    assert sorted(call.key for call in main) == sorted(k for k, v in EXPECTED.items() if v == "main")
    assert viewer_client.get(url, {"lineage": "side-9"}).context["page"].paginator.count == 0


@pytest.mark.django_db
def test_the_migration_gives_requests_analysed_before_it_their_stored_lineage(tmp_path: Path) -> None:
    session = analysed_session(tmp_path)
    Request.objects.filter(session=session).update(chain="")
    migration = importlib.import_module("dashboard.migrations.0017_request_chain")

    migration.chains_from_stored_analyses(apps, None)

    assert {row.key: row.chain for row in requests_of(session)} == EXPECTED


@pytest.mark.shared_data
@pytest.mark.django_db
def test_on_the_claude_trace_sample_every_reader_names_the_lineage_explain_gives(shared_data: Path) -> None:
    path = shared_data / "claude-trace" / "log-sample.jsonl"
    summary = ingest_paths(paths=[path], source_name="trace", format="claude-trace")
    assert not summary.errors, summary.errors
    (session,) = Session.objects.filter(source__name="trace")
    session_analyse(session_id=session.pk)
    out = StringIO()
    call_command("explain", str(path), "--json", stdout=out, stderr=StringIO())
    said = {row["number"]: row["lineage"] for row in json.loads(out.getvalue())}
    rows = requests_of(session)
    figures = session_request_figures(session=session)
    calls = session_calls_load(session_ids=[session.pk])[session.pk]

    assert {row.number: row.current_lineage for row in rows} == said
    assert [call.lineage for call in calls] == [said[row.number] for row in rows]
    charted = {row.number: figures[row.event_seq].lineage for row in rows if row.event_seq is not None}
    assert charted == said
    assert len({name for name in said.values() if name.startswith("side")}) > 1  # more than one purpose
