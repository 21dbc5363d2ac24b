from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.models import Request, Session, Source
from dashboard.requests.change_display import CONTEXT_CHARS, display_text
from projections.cache.explain.verdict import BADGE_MEANINGS, LABEL_REMEDIES, TRANSCRIPT_UNEXPLAINED_REMEDY
from tests.dashboard.test_analysis import (
    MODEL,
    START,
    body,
    capture,
    conversation,
    ingest_captures,
    text,
    usage_row,
)


def analysed(tmp_path: Path, records: list[dict[str, object]] | None = None) -> Request:
    session = ingest_captures(tmp_path, records or conversation())
    session_analyse(session_id=session.pk)
    return Request.objects.get(session=session, key="msg_3")


@pytest.mark.django_db
def test_the_request_page_highlights_the_change_and_escapes_the_content(
    tmp_path: Path, viewer_client: Client
) -> None:
    call = analysed(tmp_path)
    page = viewer_client.get(call.get_absolute_url()).content.decode()

    assert 'Please read <mark class="change">&lt;script&gt;alert(1)&lt;/script&gt; </mark>main.py' in page
    assert 'Please read <mark class="change"></mark>main.py' in page  # the previous unit: nothing there
    assert "<script>alert(1)</script>" not in page
    assert "edited" in page
    assert "A message already sent was edited in place" in page
    assert "Request as sent" in page


@pytest.mark.django_db
def test_the_request_page_shows_the_figures_side_by_side_and_the_marker_table(
    tmp_path: Path, viewer_client: Client
) -> None:
    call = analysed(tmp_path)
    response = viewer_client.get(call.get_absolute_url())
    figures = response.context["figures"]

    assert figures["reported_read"] == 1600
    assert figures["wire_allows"] == response.context["analysis"].wire_allows
    page = response.content.decode()
    for heading in ("Credited", "Wire allows", "Reported read", "Predicted read", "Predicted write"):
        assert heading in page
    assert "<code>system:0</code>" in page
    assert "the prefix changed before it, first at messages:#0.0" in page
    assert response.context["previous_request"].key == "msg_2"


@pytest.mark.django_db
def test_long_units_fold_around_the_change(tmp_path: Path, viewer_client: Client) -> None:
    before, after = "a" * 2000, "z" * 2000

    def turn(middle: str, key: str, seconds: int) -> dict[str, object]:
        request = body([{"role": "user", "content": [text(before + middle + after, marked=True)]}])
        return capture(request, key=key, at=START + timedelta(seconds=seconds), read=0, write=3000)

    records = [turn("OLD", "msg_1", 0), turn("NEW", "msg_3", 5)]
    call = analysed(tmp_path, records)
    sides = viewer_client.get(call.get_absolute_url()).context["change_sides"]

    old, new = (str(side.html) for side in sides)
    assert '<mark class="change">NEW</mark>' in new
    assert '<mark class="change">OLD</mark>' in old
    assert new.startswith(f"… ({2000 - CONTEXT_CHARS:,} characters) …" + "a" * CONTEXT_CHARS)
    assert new.endswith("z" * CONTEXT_CHARS + f"… ({2000 - CONTEXT_CHARS:,} characters) …")


def test_images_show_as_size_placeholders() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 4000}}
    assert display_text(image) == "[image/png: 3,000 bytes]"
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "shot:"}, image],
    }
    assert display_text(result) == "shot:\n[image/png: 3,000 bytes]"


@pytest.mark.django_db
def test_a_request_not_analysed_yet_says_so(tmp_path: Path, viewer_client: Client) -> None:
    session = ingest_captures(tmp_path, conversation()[:1])
    call = Request.objects.get(session=session)
    page = viewer_client.get(call.get_absolute_url()).content.decode()
    assert "This request has not been analysed yet." in page


@pytest.mark.django_db
def test_a_first_request_has_nothing_to_compare_with(tmp_path: Path, viewer_client: Client) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)
    call = Request.objects.get(session=session, key="msg_1")
    page = viewer_client.get(call.get_absolute_url()).content.decode()
    assert "The first request of its lineage: nothing to compare with." in without_tags(page)


@pytest.mark.django_db
def test_a_miss_without_a_changed_prefix_shows_the_remedy_of_its_label(
    tmp_path: Path, viewer_client: Client
) -> None:
    records = conversation()
    late = START + timedelta(minutes=10)
    records[1] = capture(records[1]["request"], key="msg_2", at=late, read=0, write=1730)
    session = ingest_captures(tmp_path, records[:2])
    session_analyse(session_id=session.pk)
    call = Request.objects.get(session=session, key="msg_2")
    response = viewer_client.get(call.get_absolute_url())

    assert response.context["analysis"].label == "ttl-expired"
    assert response.context["remedy"].startswith("The entry expired after 10 min idle: ttl 1h")
    assert "ttl 1h on the stable prefix would have kept it" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("system", "prompt_tokens", "advised"),
    [("Be brief.", 8, False), ("You are a careful engineer. " * 240, 1_690, True)],
    ids=["below the minimum", "above it"],
)
def test_the_marker_remedy_is_offered_only_to_a_prompt_the_model_could_cache(
    tmp_path: Path, viewer_client: Client, system: str, prompt_tokens: int, advised: bool
) -> None:
    request = {
        "model": MODEL,
        "max_tokens": 64,
        "system": [text(system)],
        "messages": [{"role": "user", "content": [text("Say hi.")]}],
    }
    records = [
        capture(
            request, key=f"msg_{n}", at=START + timedelta(minutes=n), read=0, write=0, uncached=prompt_tokens
        )
        for n in (1, 2)
    ]
    session = ingest_captures(tmp_path, records)
    session_analyse(session_id=session.pk)
    call = Request.objects.get(session=session, key="msg_2")
    response = viewer_client.get(call.get_absolute_url())
    page = html.unescape(without_tags(response.content.decode()))

    assert response.context["analysis"].label == "no-breakpoint"
    assert (LABEL_REMEDIES["no-breakpoint"] in page) is advised
    below = (
        f"The prompt is {prompt_tokens} tokens, below the model's minimum cacheable length of 1,024 tokens"
    )
    assert (below in page) is not advised


@pytest.mark.django_db
def test_a_stripped_last_image_shows_the_image_and_its_placeholder_side_by_side(
    tmp_path: Path, viewer_client: Client
) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 400}}
    with_image = [
        {"role": "user", "content": [text("Look at this screenshot."), image, text("Why?", marked=True)]}
    ]
    stripped = [
        {
            "role": "user",
            "content": [text("Look at this screenshot."), text("[image removed]"), text("Why?")],
        },
        {"role": "assistant", "content": [text("It renders blank.")]},
        {"role": "user", "content": [text("Fix it.", marked=True)]},
    ]
    records = [
        capture(body(with_image), key="msg_1", at=START, read=0, write=3000),
        capture(body(stripped), key="msg_2", at=START + timedelta(minutes=1), read=1500, write=1600),
    ]
    session = ingest_captures(tmp_path, records)
    session_analyse(session_id=session.pk)
    page = viewer_client.get(
        Request.objects.get(session=session, key="msg_2").get_absolute_url()
    ).content.decode()
    assert "image-stripped" in page
    assert "This request · text · 15 characters" in page  # the placeholder text ...
    assert "Previous request · image · 24 characters" in page  # ... where the image was
    assert "/png: 1,500 bytes</mark>]" in page  # shown by its size
    assert "iVBORiVBOR" not in page


@pytest.mark.django_db
def test_an_unexplained_miss_without_a_body_asks_for_the_bytes_rather_than_blaming_them(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="cc", format="claude-code"
    )
    usage_row(session, 0, START, 0, 12_000)
    usage_row(session, 1, START + timedelta(minutes=1), 3_000, 9_700)  # 9,000 expected back, not read
    session_analyse(session_id=session.pk)
    response = viewer_client.get(Request.objects.get(session=session, ordinal=1).get_absolute_url())

    assert response.context["analysis"].label == "unexplained"
    assert response.context["remedy"] == TRANSCRIPT_UNEXPLAINED_REMEDY
    assert "capture the requests (claude-trace" in response.content.decode()
    assert LABEL_REMEDIES["unexplained"] not in response.content.decode()
    assert "identical prefix inside the TTL" not in response.content.decode()


@pytest.mark.django_db
def test_a_request_that_read_nothing_and_wrote_its_prompt_does_not_show_no_miss(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="cold", format="claude-code"
    )
    usage_row(session, 0, START, 0, 12_000)  # the whole prompt written, nothing read
    session_analyse(session_id=session.pk)
    response = viewer_client.get(Request.objects.get(session=session, ordinal=0).get_absolute_url())
    page = response.content.decode()

    assert response.context["verdict"].badge == "cold write"
    assert ">cold write</span>" in page
    assert ">no miss</span>" not in page
    assert BADGE_MEANINGS["cold write"] in page


@pytest.mark.django_db
def test_a_read_of_another_sessions_prefix_links_the_request_that_wrote_it(viewer_client: Client) -> None:
    source = Source.objects.create(name="laptop")
    main = Session.objects.create(source=source, external_id="main", format="claude-code")
    usage_row(main, 0, START, 0, 20_000)
    writer = usage_row(main, 1, START + timedelta(minutes=1), 20_000, 5_000)
    compaction = Session.objects.create(source=source, external_id="compact", format="claude-code")
    usage_row(compaction, 0, START + timedelta(minutes=2), 25_000, 3_000)  # main's whole prompt, read
    elsewhere = Session.objects.create(
        source=Source.objects.create(name="server"), external_id="other", format="claude-code"
    )
    usage_row(elsewhere, 0, START + timedelta(minutes=2), 25_000, 3_000)

    session_analyse(session_id=compaction.pk)
    session_analyse(session_id=elsewhere.pk)
    reader = Request.objects.get(session=compaction, ordinal=0)
    page = viewer_client.get(reader.get_absolute_url()).content.decode()

    assert reader.analysis.predicted_read == 25_000
    assert reader.analysis.data["read_from"] == {"session": str(main.pk), "key": writer.key, "ordinal": 1}
    assert f'href="{writer.get_absolute_url()}">request 2</a> of another session' in page
    assert main.get_absolute_url() in page
    # Another source's session shares no cache with it: nothing is read across.
    assert Request.objects.get(session=elsewhere).analysis.data["read_from"] is None


@pytest.mark.django_db
def test_the_request_page_names_the_lineage_the_engine_gave_a_side_call(
    tmp_path: Path, viewer_client: Client
) -> None:
    def side_call(system: str, question: str, key: str, seconds: int) -> dict[str, object]:
        request = {
            "model": "claude-3-5-haiku-20241022",
            "max_tokens": 64,
            "system": [text(system)],
            "messages": [{"role": "user", "content": [text(question)]}],
        }
        return capture(request, key=key, at=START + timedelta(seconds=seconds), read=0, write=0)

    records = [
        *conversation()[:2],
        side_call("Write a title.", "the chat so far", "msg_title", 40),
        side_call("Answer in one word.", "quota", "msg_quota", 50),
    ]
    session_analyse(session_id=ingest_captures(tmp_path, records).pk)
    quota = Request.objects.get(key="msg_quota")
    page = viewer_client.get(quota.get_absolute_url()).content.decode()

    assert quota.lineage == "main"  # the capture reader knows no lineages
    assert '<span class="lineage">side-2</span>' in page
    assert "The first request of its lineage" in without_tags(page)  # not compared with the title call


def without_tags(page: str) -> str:
    """The page's text as read, without the markup of links such as glossary terms."""
    return re.sub(r"<[^>]+>", "", page)


def deepseek_row(session: Session, ordinal: int, read: int | None) -> Request:
    """A DeepSeek call as a dsh log stores it: usage only, with no cache write field."""
    return Request.objects.create(
        session=session,
        ordinal=ordinal,
        key=f"ds_{ordinal}",
        provider="deepseek-official",
        platform="deepseek",
        api="chat",
        model="deepseek-chat",
        started_at=START + timedelta(seconds=30 * ordinal),
        uncached_input_tokens=400,
        cache_read_tokens=read,
        output_tokens=90,
        usage_convention="dsh",
    )


@pytest.mark.django_db
def test_a_prediction_from_an_unreported_write_shows_unknown_and_claims_no_hit(viewer_client: Client) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="ds", format="dsh"
    )
    deepseek_row(session, 0, 0)
    second = deepseek_row(session, 1, 8_064)
    session_analyse(session_id=session.pk)
    response = viewer_client.get(second.get_absolute_url())
    page = without_tags(response.content.decode())

    assert second.analysis.predicted_read is None
    assert response.context["verdict"].badge == "not predicted"
    assert re.search(r"Predicted read\s*—", page)
    assert ">no miss</span>" not in response.content.decode()
    assert BADGE_MEANINGS["no miss"] not in page
    assert "Reads the prefix written by" not in page


@pytest.mark.django_db
def test_a_request_whose_read_was_not_reported_does_not_say_it_read_what_was_predicted(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="cc", format="claude-code"
    )
    usage_row(session, 0, START, 0, 12_000)
    unread = usage_row(session, 1, START + timedelta(minutes=1), 0, 300)
    Request.objects.filter(pk=unread.pk).update(cache_read_tokens=None)
    session_analyse(session_id=session.pk)
    response = viewer_client.get(unread.get_absolute_url())
    page = without_tags(response.content.decode())

    assert re.search(r"Reported read\s*—", page)
    assert response.context["verdict"].badge == "read not reported"
    assert ">no miss</span>" not in response.content.decode()
    assert BADGE_MEANINGS["no miss"] not in page


@pytest.mark.django_db
def test_the_markers_of_a_usage_only_previous_request_are_unknown_not_absent(viewer_client: Client) -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="cc", format="claude-code"
    )
    usage_row(session, 0, START, 0, 12_000)
    second = usage_row(session, 1, START + timedelta(minutes=1), 12_000, 300)
    session_analyse(session_id=session.pk)
    page = viewer_client.get(second.get_absolute_url()).content.decode()

    assert "The previous request's cache markers are unknown: only its usage was logged." in page
    assert "carried no cache marker" not in page
    assert "Unknown: only this request's usage was logged, not the markers it carried." in page


@pytest.mark.django_db
def test_the_first_request_of_a_lineage_lists_the_markers_it_sent(
    tmp_path: Path, viewer_client: Client
) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)
    first = Request.objects.get(session=session, key="msg_1")
    response = viewer_client.get(first.get_absolute_url())
    page = response.content.decode()

    sent = response.context["markers_sent"]
    assert [(m["tier"], m["position"], m["ttl"]) for m in sent] == [
        ("system", 1, "5m"),
        ("messages", 2, "5m"),
    ]
    table = page[page.index('aria-labelledby="markers-sent-heading"') :].split("</table>")[0]
    assert table.count("<tr><td") == 2
    assert "<code>messages:#0.0</code>" in table
    assert "The first request of its lineage: nothing to compare with." in without_tags(page)


@pytest.mark.django_db
def test_a_request_without_markers_says_it_carried_none(tmp_path: Path, viewer_client: Client) -> None:
    records = conversation()
    records[0]["request"]["system"] = [text("You are terse.")]
    records[0]["request"]["messages"][0]["content"] = [text("Please read main.py")]
    session = ingest_captures(tmp_path, records[:1])
    session_analyse(session_id=session.pk)
    page = viewer_client.get(Request.objects.get(session=session).get_absolute_url()).content.decode()
    assert "This request carried no cache marker." in page
