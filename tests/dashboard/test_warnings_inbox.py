"""The warnings inbox: problems only, each with its severity, stake, time and link, grouped by kind
and session and sorted by what is at stake; and where the host's own log lines went instead."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.analysis.session_warnings import session_warn, sessions_refresh_warning_count
from dashboard.analysis.warnings import warnings_store
from dashboard.models import Event, HostNote, Session, Source, Warning
from dashboard.models.warnings import severity_of
from projections.cache.results import Finding, RecordsAnalysis, RequestResult
from tests.dashboard.test_analysis import START, usage_row

pytestmark = pytest.mark.django_db


def result_for(key: str, *, predicted_read: int) -> RequestResult:
    figures = {"predicted_read": predicted_read, "wire_allows": None, "credited": None}
    return RequestResult(
        key=key,
        data={"figures": figures},
        label="",
        material=True,
        predicted_read=predicted_read,
        predicted_write=None,
        wire_allows=None,
        credited=None,
        has_body=True,
    )


def session_named(name: str, source: str = "laptop") -> Session:
    return Session.objects.create(
        source=Source.objects.get_or_create(name=source)[0], external_id=name, format="dsh"
    )


def test_a_stored_warning_carries_severity_stake_time_and_a_link_to_its_request() -> None:
    session = session_named("one")
    request = usage_row(session, 0, START + timedelta(hours=2), read=1_000, write=0)
    analysis = RecordsAnalysis(
        results=[result_for(request.key, predicted_read=101_000)],
        findings=[Finding("unexplained-miss", "main", "read 1,000 of 101,000", request.key)],
    )
    warnings_store(session=session, result=analysis, requests={request.key: request})

    warning = Warning.objects.get(session=session)
    assert warning.severity == "warning"
    assert warning.tokens_at_stake == 100_000  # predicted read less reported read
    assert warning.cost_at_stake == Decimal("0.27")  # 100k at Sonnet's $3 input less its $0.30 read
    assert warning.happened_at == request.started_at  # when the request ran, not when it was stored
    assert warning.get_absolute_url() == reverse("dashboard:request", args=[request.pk])


def test_a_missed_five_minute_write_is_at_stake_at_the_write_rate_not_the_input_rate() -> None:
    session = session_named("one")
    # Opus 4.5: $5 input, $6.25 5-minute write, $0.50 read. The 76,800 tokens the bytes allowed it to
    # read were written again at the 5-minute rate: billed 76,800 x (6.25 - 0.50) more than a hit.
    request = usage_row(session, 0, START, read=0, write=76_800, uncached=3, model="claude-opus-4-5")
    analysis = RecordsAnalysis(
        results=[result_for(request.key, predicted_read=76_800)],
        findings=[Finding("unexplained-miss", "main", "read 0 of 76,800", request.key)],
    )
    warnings_store(session=session, result=analysis, requests={request.key: request})

    warning = Warning.objects.get(session=session)
    assert warning.tokens_at_stake == 76_800
    assert warning.cost_at_stake == Decimal("0.4416")


def test_a_warning_about_an_event_is_dated_by_it_and_links_its_place_on_the_timeline() -> None:
    session = session_named("one")
    at = START + timedelta(minutes=7)
    Event.objects.create(session=session, seq=12, type="user/message", time=at, data={})
    session_warn(
        session_id=session.pk, kind="fold-error", place="contextBreakdown v8 seq 12", message="x", seq=12
    )

    warning = Warning.objects.get(session=session)
    assert (warning.severity, warning.happened_at, warning.tokens_at_stake) == ("error", at, 0)
    assert warning.get_absolute_url() == f"{session.get_absolute_url()}?from=12#seq-12"


def test_every_kind_has_one_severity() -> None:
    assert {severity_of(kind) for kind in Warning.Kind.values} <= {"error", "warning", "info"}
    assert severity_of("model-error") == "error"
    assert severity_of("provider-disagrees") == "info"
    assert "host-log" not in Warning.Kind.values


def warn(session: Session, kind: str, place: str, cost: str | None, hours: int, count: int = 1) -> Warning:
    return Warning.objects.create(
        session=session,
        kind=kind,
        place=place,
        message=f"{kind} at {place}",
        count=count,
        tokens_at_stake=1000,
        cost_at_stake=None if cost is None else Decimal(cost),
        happened_at=START + timedelta(hours=hours),
    )


def test_the_inbox_groups_by_kind_and_session_and_sorts_by_cost_then_time(viewer_client: Client) -> None:
    one, two = session_named("one"), session_named("two")
    warn(one, "over-credit", "main", "0.10", hours=1, count=3)
    warn(one, "over-credit", "side", "0.04", hours=5)
    warn(two, "unexplained-miss", "main", "2.00", hours=0)
    warn(two, "marker-limit", "main", "0.15", hours=2)
    warn(one, "marker-limit", "main", "0.15", hours=3)  # the same cost: the later one first
    warn(two, "fold-error", "seq 4", None, hours=9)  # unpriced: last

    groups = viewer_client.get(reverse("dashboard:warnings")).context["groups"]
    assert [(g.kind, g.session.external_id) for g in groups] == [
        ("unexplained-miss", "two"),
        ("marker-limit", "one"),
        ("marker-limit", "two"),
        ("over-credit", "one"),
        ("fold-error", "two"),
    ]
    credit = groups[3]
    assert (credit.places, credit.occurrences, credit.tokens, credit.cost) == (2, 4, 2000, Decimal("0.14"))
    assert credit.happened == START + timedelta(hours=5)
    assert [w.place for w in credit.warnings] == ["main", "side"]  # costliest place first


def test_each_group_shows_its_five_costliest_places_and_links_the_rest(viewer_client: Client) -> None:
    one, two = session_named("one"), session_named("two")
    for n in range(6):
        warn(one, "over-credit", f"p{n}", f"0.{n}", hours=n)
    warn(one, "over-credit", "tie-earlier", "0.5", hours=1)  # the cost of p5, earlier: after it
    warn(one, "over-credit", "unpriced", None, hours=20)  # no price: last however late
    warn(two, "over-credit", "other", "9", hours=0)

    response = viewer_client.get(reverse("dashboard:warnings"))
    groups = {g.session.external_id: g for g in response.context["groups"]}
    assert [w.place for w in groups["one"].warnings] == ["p5", "tie-earlier", "p4", "p3", "p2"]
    assert (groups["one"].places, groups["one"].hidden_places) == (8, 3)
    assert [w.place for w in groups["two"].warnings] == ["other"]
    assert f"?kind=over-credit&amp;session={one.pk}" in response.content.decode()
    assert "3 more places" in response.content.decode()

    every = viewer_client.get(reverse("dashboard:warnings"), {"kind": "over-credit", "session": one.pk})
    (group,) = every.context["groups"]
    assert [w.place for w in group.warnings] == [
        "p5",
        "tie-earlier",
        "p4",
        "p3",
        "p2",
        "p1",
        "p0",
        "unpriced",
    ]
    assert group.hidden_places == 0


def test_the_inbox_reads_a_bounded_number_of_queries(viewer_client: Client) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(reverse("dashboard:warnings")).status_code == 200
        return len(captured)

    warn(session_named("s0"), "over-credit", "main", "1", hours=0)
    few = queries()
    for n in range(1, 30):
        session = session_named(f"s{n}", source=f"host-{n % 3}")
        warn(session, "over-credit", "main", "1", hours=n)
        warn(session, "marker-limit", "main", "1", hours=n)
    assert queries() == few


def test_host_notes_are_not_in_the_inbox_but_on_the_session_page_and_searchable(
    viewer_client: Client,
) -> None:
    session = session_named("one")
    warn(session, "over-credit", "main", "0.10", hours=1)
    line = "[kv-unified] seq-29: reused 3818 tokens, 2 markers kept"
    HostNote.objects.create(session=session, seq=29, line=line, level="info", time=START)
    HostNote.objects.create(session=session, seq=31, line="[kv-unified] slot 4 evicted", level="info")

    inbox = viewer_client.get(reverse("dashboard:warnings")).content.decode()
    assert "over-credit" in inbox
    assert "kv-unified" not in inbox

    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "Host notes" in page
    assert line in page
    assert f'href="{session.get_absolute_url()}?from=29#seq-29"' in page

    found = viewer_client.get(session.get_absolute_url(), {"notes": "evicted"}).content.decode()
    assert "slot 4 evicted" in found
    assert "reused 3818" not in found
    fragment = viewer_client.get(
        reverse("dashboard:session_host_notes", args=[session.pk]),
        {"notes": "3818"},
        headers={"HX-Request": "true"},
    ).content.decode()
    # The results alone: a refresh that replaced the search box would drop what was typed since.
    assert fragment.lstrip().startswith('<div id="host-notes-results"')
    assert 'name="notes"' not in fragment
    assert 'hx-target="#host-notes-results"' in page
    assert "reused 3818" in fragment
    assert "evicted" not in fragment


def test_a_warning_count_already_right_is_not_written_again() -> None:
    source = Source.objects.create(name="laptop")
    quiet, warned = (Session.objects.create(source=source, external_id=name) for name in ("quiet", "warned"))
    session_warn(session_id=warned.pk, kind=Warning.Kind.FOLD_ERROR, place="p", message="m")
    assert sessions_refresh_warning_count(session_ids=[quiet.pk, warned.pk]) == 1
    assert sessions_refresh_warning_count(session_ids=[quiet.pk, warned.pk]) == 0
    assert Session.objects.get(pk=warned.pk).warning_count == 1


def test_storing_says_whether_the_analysis_added_or_removed_a_warning() -> None:
    session = session_named("one")
    request = usage_row(session, 0, START, read=1_000, write=0)
    found = RecordsAnalysis(
        results=[result_for(request.key, predicted_read=101_000)],
        findings=[Finding("unexplained-miss", "main", "read 1,000 of 101,000", request.key)],
    )
    requests = {request.key: request}
    assert warnings_store(session=session, result=found, requests=requests)
    assert not warnings_store(session=session, result=found, requests=requests)  # the same one again
    assert warnings_store(session=session, result=RecordsAnalysis(), requests=requests)  # gone
    assert not Warning.objects.filter(session=session).exists()
