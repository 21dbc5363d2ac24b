"""The session page's timeline reads as the conversation: chunk runs fold into their message, bookkeeping
into one line, raw JSON one click away and escaped, long sessions paged with "more"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.models import Event, Session, Source
from dashboard.sessions.timeline import timeline_items
from dashboard.sessions.timeline_page import ITEMS_PER_PAGE
from tests.dashboard.test_analysis import START

pytestmark = pytest.mark.django_db


def chunk(text: str) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}


def conversation_events(session: Session) -> list[Event]:
    rows = [
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("user/message", {"role": "user", "content": "Why is the build slow?"}),
        *[("assistant/chunk", chunk(word)) for word in ("The ", "cache ", "was ", "cold.")],
        (
            "assistant/message",
            {"message": {"role": "assistant", "content": [{"type": "text", "text": "The cache was cold."}]}},
        ),
        ("tool/call", {"callId": "c1", "name": "bash", "arguments": '{"command": "make"}'}),
        (
            "tool/result",
            {
                "message": {
                    "role": "user",
                    "content": [{"type": "tool-result", "content": [{"type": "text", "text": "done"}]}],
                }
            },
        ),
        ("compaction/summary", {"summary": "Earlier turns, condensed."}),
    ]
    return Event.objects.bulk_create(
        Event(session=session, seq=seq, type=kind, time=START + timedelta(seconds=seq), data=data)
        for seq, (kind, data) in enumerate(rows)
    )


@pytest.fixture
def session() -> Session:
    source = Source.objects.create(name="laptop")
    return Session.objects.create(source=source, external_id="slow-build", format="dsh")


def test_a_chunk_run_folds_into_the_message_it_built(session: Session) -> None:
    items = timeline_items(conversation_events(session))
    assert [(item.kind, item.label) for item in items] == [
        ("meta", "Bookkeeping"),
        ("user", "User"),
        ("assistant", "Assistant"),
        ("tool-call", "Tool call · bash"),
        ("tool-result", "Tool result"),
        ("compaction", "Compaction summary"),
    ]
    reply = items[2]
    assert [event.seq for event in reply.chunks] == [3, 4, 5, 6]
    assert (reply.main.seq, reply.text) == (7, "The cache was cold.")
    assert items[3].text == '{"command": "make"}'
    assert items[4].text == "done"


def test_a_chunk_run_no_message_follows_is_one_streamed_item_with_its_failure() -> None:
    class Row:
        def __init__(self, seq: int, type_: str, data: dict[str, Any]) -> None:
            self.seq, self.type, self.time, self.data = seq, type_, None, data

    failure = {"kind": "error", "failure": {"message": "context window exceeded"}}
    items = timeline_items(
        [
            Row(0, "assistant/chunk", chunk("Half")),
            Row(1, "assistant/chunk", {"chunk": {"type": "finish", "reason": failure}}),
            Row(2, "compaction/start", {}),
        ]
    )
    assert [item.kind for item in items] == ["assistant", "compaction"]
    assert items[0].error
    assert len(items[0].chunks) == 2
    assert "Half" in items[0].text
    assert "context window exceeded" in items[0].text


def test_the_session_page_shows_the_conversation_with_every_event_anchored(
    viewer_client: Client, session: Session
) -> None:
    conversation_events(session)
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "Why is the build slow?" in page
    assert "4 chunks" in page
    assert page.count('class="tl tl-') == 6  # ten events, six lines
    for seq in range(10):
        assert f'id="seq-{seq}"' in page


def test_raw_json_is_one_click_away_and_escaped(viewer_client: Client, session: Session) -> None:
    Event.objects.create(
        session=session, seq=0, type="user/message", data={"content": '<script>alert("x")</script>'}
    )
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page  # in the line and its JSON
    assert '<details class="tl-raw">' in page


def test_a_long_session_is_paged_and_more_appends_the_next_items(
    viewer_client: Client, session: Session
) -> None:
    Event.objects.bulk_create(
        Event(session=session, seq=seq, type="user/message", data={"content": f"question {seq}"})
        for seq in range(ITEMS_PER_PAGE + 5)
    )
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert f"question {ITEMS_PER_PAGE - 1}<" in page
    assert f"question {ITEMS_PER_PAGE}<" not in page
    assert f"?from={ITEMS_PER_PAGE}#seq-{ITEMS_PER_PAGE}" in page  # works without JavaScript

    more = viewer_client.get(
        reverse("dashboard:session_events", args=[session.pk]),
        {"more": "1", "from": str(ITEMS_PER_PAGE)},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert more.lstrip().startswith('<li id="seq-')
    assert f"question {ITEMS_PER_PAGE}<" in more
    assert "question 0<" not in more
    assert "<section" not in more


def test_a_stream_the_page_would_cut_before_its_message_starts_the_next_page(
    viewer_client: Client, session: Session
) -> None:
    question = Event(session=session, seq=0, type="user/message", data={"content": "Why?"})
    stream = [
        Event(session=session, seq=seq, type="assistant/chunk", data=chunk("w")) for seq in range(1, 260)
    ]
    Event.objects.bulk_create([question, *stream])
    context = viewer_client.get(session.get_absolute_url()).context
    assert [item.kind for item in context["timeline"]] == ["user"]
    assert context["events_next"] == 1


def test_an_event_on_a_test_clock_shows_no_time_rather_than_1970(viewer_client: Client) -> None:
    from datetime import UTC, datetime

    source = Source.objects.create(name="snapshots")
    session = Session.objects.create(source=source, external_id="snap", format="dsh", started_at=START)
    Event.objects.create(session=session, seq=0, type="step/start", time=datetime(1970, 1, 1, tzinfo=UTC))
    Event.objects.create(session=session, seq=1, type="turn/start", time=START)
    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()
    assert "1970" not in page
    assert f"{START:%Y-%m-%d %H:%M:%S}" in page


def test_a_session_that_runs_over_days_dates_its_moments(viewer_client: Client) -> None:
    from dashboard.models import Request

    source = Source.objects.create(name="days")
    later = START + timedelta(days=3)
    session = Session.objects.create(
        source=source, external_id="days", format="dsh", started_at=START, last_activity=later
    )
    Event.objects.create(session=session, seq=0, type="turn/start", time=START)
    Event.objects.create(session=session, seq=1, type="turn/start", time=later)
    Request.objects.create(session=session, ordinal=0, key="r0", provider="anthropic", started_at=later)
    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()
    assert f"#0\u20131 · {START:%Y-%m-%d %H:%M:%S}<" in page  # the conversation's line
    assert f'<td class="small">{later:%Y-%m-%d %H:%M:%S}</td>' in page  # the request's row
    # Within one day, the time of day alone.
    Session.objects.filter(pk=session.pk).update(last_activity=START + timedelta(hours=2))
    page = viewer_client.get(reverse("dashboard:session", args=[session.pk])).content.decode()
    assert f"#0\u20131 · {START:%H:%M:%S}<" in page


def test_an_instant_is_written_as_djangos_date_filter_writes_it_in_the_zone_in_force() -> None:
    from datetime import UTC, datetime

    from django.template import Context, Template
    from django.utils import timezone

    moment = datetime(2026, 1, 2, 23, 4, 5, 678000, tzinfo=UTC)
    both = Template('{% load cachescope %}{{ m|date:"Y-m-d H:i:s" }}|{{ m|instant }}')
    with timezone.override("Asia/Kolkata"):
        assert both.render(Context({"m": moment})) == "2026-01-03 04:34:05|2026-01-03 04:34:05"


def test_a_huge_message_is_cut_on_the_page_with_a_link_to_its_whole_json(
    viewer_client: Client, session: Session
) -> None:
    huge = "0123456789" * 500_000  # a 5 MB message
    Event.objects.create(session=session, seq=0, type="user/message", data={"content": huge, "role": "user"})

    response = viewer_client.get(session.get_absolute_url())

    page = response.content.decode()
    assert len(page) < 200_000
    link = reverse("dashboard:session_event", args=[session.pk, 0])
    assert f'href="{link}"' in page
    assert "more characters" in page
    whole = viewer_client.get(link)
    assert whole["Content-Type"] == "application/json"
    assert whole.json()["content"] == huge


def test_a_short_event_has_no_link_to_more(viewer_client: Client, session: Session) -> None:
    conversation_events(session)
    page = viewer_client.get(session.get_absolute_url()).content.decode()
    assert "The whole event as JSON" not in page
    assert viewer_client.get(reverse("dashboard:session_event", args=[session.pk, 99])).status_code == 404
