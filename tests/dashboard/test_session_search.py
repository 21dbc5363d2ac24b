"""A session is found by what it was: its title (a transcript's summary, else its first prompt) and
the words of its conversation, on SQLite by LIKE and on PostgreSQL by full-text search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dashboard.ingest.files import ingest_paths
from dashboard.ingest.followups import followups_deferred
from dashboard.models import Event, Session
from dashboard.models.sessions import CONVERSATION_TYPES
from dashboard.sessions.message_words import message_words_index
from tests.dashboard.logs import dsh_lines, write_jsonl
from tests.projections.formats.conftest import transcript_line

pytestmark = pytest.mark.django_db

SESSION = "6c1f0e2a-93b4-4d57-8e1a-0f2b3c4d5e6f"


def line(kind: str, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return transcript_line(kind, uuid, content, session=SESSION, **extra)


def transcript(folder: Path, *, summary: str | None) -> Path:
    lines = [
        line("user", "u1", "Why does the nightly export time out?"),
        line(
            "assistant",
            "a1",
            [{"type": "text", "text": "The exporter holds a lock on the ledger table."}],
            requestId="r1",
        ),
    ]
    if summary is not None:
        lines.append({"type": "summary", "summary": summary, "leafUuid": "a1"})
    return write_jsonl(folder / "proj" / f"{SESSION}.jsonl", lines)


def found(client: Client, q: str) -> list[str]:
    return [s.external_id for s in client.get(reverse("dashboard:sessions"), {"q": q}).context["page"].rows]


def test_a_claude_code_session_is_titled_by_its_summary_and_found_by_its_words(
    viewer_client: Client, tmp_path: Path
) -> None:
    transcript(tmp_path, summary="Nightly export timeout traced to a ledger lock")
    ingest_paths(paths=[tmp_path], source_name="laptop")

    session = Session.objects.get(external_id=SESSION)
    page = viewer_client.get(reverse("dashboard:sessions")).content.decode()

    assert session.title == "Nightly export timeout traced to a ledger lock"
    assert "Nightly export timeout traced to a ledger lock" in page
    assert found(viewer_client, "ledger lock") == [SESSION]  # the title's words


@pytest.mark.parametrize("words", ["exporter holds", "nightly export", "lock"])
def test_search_finds_a_session_by_what_was_said_in_it(
    viewer_client: Client, tmp_path: Path, words: str
) -> None:
    transcript(tmp_path, summary=None)
    write_jsonl(tmp_path / "other" / "session.jsonl", dsh_lines("other", turns=1))
    ingest_paths(paths=[tmp_path], source_name="laptop")

    assert found(viewer_client, words) == [SESSION]
    assert found(viewer_client, "no such words anywhere") == []


def test_a_session_stored_untitled_gets_its_title_when_its_log_is_read_again(tmp_path: Path) -> None:
    path = transcript(tmp_path, summary="Export timeout")
    ingest_paths(paths=[tmp_path], source_name="laptop")
    Session.objects.update(title="")  # as a release before titles stored it

    ingest_paths(paths=[path], source_name="laptop")

    assert Session.objects.get(external_id=SESSION).title == "Export timeout"


def test_a_grown_transcript_takes_the_summary_written_since(tmp_path: Path) -> None:
    path = transcript(tmp_path, summary=None)
    ingest_paths(paths=[tmp_path], source_name="laptop")
    assert Session.objects.get(external_id=SESSION).title == "Why does the nightly export time out?"
    with path.open("a") as grown:
        grown.write(json.dumps(line("user", "u2", "Thanks, that was it.")) + "\n")
        grown.write(json.dumps({"type": "summary", "summary": "Ledger lock", "leafUuid": "a1"}) + "\n")

    ingest_paths(paths=[path], source_name="laptop")

    assert Session.objects.get(external_id=SESSION).title == "Ledger lock"


def test_on_postgresql_the_conversation_search_reads_the_full_text_index(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("full-text search and its GIN index are PostgreSQL's; SQLite searches by LIKE")
    transcript(tmp_path, summary=None)
    ingest_paths(paths=[tmp_path], source_name="laptop")
    # A fleet's worth of other messages, so the planner weighs the index against reading them all.
    chatter = Session.objects.create(source=Session.objects.get().source, external_id="chatter", format="dsh")
    Event.objects.bulk_create(
        Event(session=chatter, seq=seq, type="user/message", data={"content": f"routine note {seq}"})
        for seq in range(20_000)
    )
    message_words_index(list(Session.objects.values_list("pk", flat=True)))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dashboard_event")

    with CaptureQueriesContext(connection) as queries:
        assert [s.external_id for s in Session.objects.search("ledger table")] == [SESSION]
    [sql] = [query["sql"] for query in queries if "to_tsvector" in query["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # The words' GIN index, and for messages not indexed yet the small index of those.
    assert "event_words" in plan
    assert "event_words_pending" in plan


def test_on_postgresql_a_message_is_found_before_and_after_its_words_are_indexed(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the words column is PostgreSQL's; SQLite searches by LIKE")
    transcript(tmp_path, summary=None)
    with followups_deferred():
        ingest_paths(paths=[tmp_path], source_name="laptop")

    def unindexed() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM dashboard_event WHERE words IS NULL AND type = ANY(%s)",
                [list(CONVERSATION_TYPES)],
            )
            return int(cursor.fetchone()[0])

    messages = Event.objects.filter(type__in=CONVERSATION_TYPES).count()
    assert messages > 0
    assert unindexed() == messages  # the ingest left them to its follow-up
    assert [s.external_id for s in Session.objects.search("ledger table")] == [SESSION]

    assert message_words_index([Session.objects.get().pk]) == messages
    assert unindexed() == 0
    assert [s.external_id for s in Session.objects.search("ledger table")] == [SESSION]
    assert list(Session.objects.search("nowhere said")) == []
    assert message_words_index([Session.objects.get().pk]) == 0  # once indexed, left alone
