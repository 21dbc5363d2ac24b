"""An incremental ingest of a file that changed since the last one: skipped, read from its offset, or
read whole and stored anew; in every case the store ends as a first ingest of the file leaves it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import transaction

from dashboard.ingest.files import ingest_paths
from dashboard.ingest.summary import IngestSummary
from dashboard.models import Event, FileState, Request, Session
from tests.dashboard.logs import write_dsh_log
from tests.dashboard.transcript_lines import SESSION, call, conversation, prompt

pytestmark = pytest.mark.django_db


def write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def ingest(path: Path, source: str = "local") -> IngestSummary:
    return ingest_paths(paths=[path], source_name=source, incremental=True)


def stored(source: str = "local") -> dict[str, object]:
    """What the store holds of ``source``: each session's events and requests, as comparable values."""
    sessions = {}
    for session in Session.objects.filter(source__name=source).order_by("external_id"):
        events = list(Event.objects.filter(session=session).order_by("seq").values_list("seq", "type"))
        requests = list(
            Request.objects.filter(session=session)
            .order_by("ordinal")
            .values_list("ordinal", "key", "cache_read_tokens", "output_tokens")
        )
        sessions[session.external_id] = {"events": events, "requests": requests}
    return sessions


def fresh(path: Path) -> dict[str, object]:
    """What a first ingest of the file as it is now stores, into a store without the incremental
    ingest's copy (which it would otherwise find under the other source and not store again)."""
    with transaction.atomic():
        Session.objects.filter(source__name="local").delete()
        ingest_paths(paths=[path], source_name="fresh")
        first = stored("fresh")
        transaction.set_rollback(True)
    return first


def test_an_unchanged_file_is_skipped_on_its_stat(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write(path, conversation(3))
    first = ingest(path)
    assert first.sessions_added == 1
    assert first.requests_added == 3

    again = ingest(path)

    assert again.files is not None
    assert again.files.unchanged == 1
    assert again.sessions == 0
    assert again.duplicates == 0


def test_a_grown_file_is_read_from_its_offset_and_stores_only_the_new_call(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write(path, conversation(3))
    ingest(path)
    offset = FileState.objects.get().offset

    append(path, b"".join(call(4, read=22_000, write=500)))
    grown = ingest(path)

    assert grown.files is not None
    assert grown.files.resumed == 1
    assert grown.requests_added == 1
    assert grown.events_added == 2
    assert FileState.objects.get().offset == path.stat().st_size > offset
    assert stored() == {SESSION: fresh(path)[SESSION]}


def test_a_line_appended_in_two_writes_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write(path, conversation(2))
    ingest(path)
    text, tool, result = call(3, read=21_500, write=500)

    append(path, text + tool[: len(tool) // 2])
    half = ingest(path)
    assert FileState.objects.get().offset == path.stat().st_size - len(tool) // 2
    append(path, tool[len(tool) // 2 :] + result)
    whole = ingest(path)

    assert half.requests_added == 1
    assert whole.requests_added == 0
    assert stored() == {SESSION: fresh(path)[SESSION]}


def test_a_call_stored_while_it_was_written_takes_its_final_output_count(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    text, tool, result = call(1, read=0, write=20_000, output=640)
    write(path, [prompt(1, "Read f1.py"), text])
    ingest(path)
    assert Request.objects.get().output_tokens == 2

    append(path, tool + result)
    later = ingest(path)

    assert later.requests_completed == 1
    assert later.requests_added == 0
    assert Request.objects.get().output_tokens == 640
    assert stored() == {SESSION: fresh(path)[SESSION]}


def test_a_truncated_file_is_read_whole_and_its_session_stored_anew(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    lines = conversation(4)
    write(path, lines)
    ingest(path)

    write(path, lines[:4])
    truncated = ingest(path)

    assert truncated.files is not None
    assert truncated.files.rewritten == 1
    assert stored() == {SESSION: fresh(path)[SESSION]}
    assert Request.objects.filter(session__source__name="local").count() == 1


def test_a_file_rewritten_in_place_is_read_whole_and_stored_anew(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write(path, conversation(3))
    ingest(path)

    # Same length, other bytes: a cache read rewritten (so the mtime and the hashed tail differ).
    lines = conversation(3)
    lines[-3:] = call(3, read=99_999, write=500)
    write(path, lines)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    rewritten = ingest(path)

    assert rewritten.files is not None
    assert rewritten.files.rewritten == 1
    assert stored() == {SESSION: fresh(path)[SESSION]}
    assert Request.objects.get(session__source__name="local", key="req_0003").cache_read_tokens == 99_999


def test_a_file_replaced_by_another_session_leaves_no_orphan(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    write(path, conversation(2))
    ingest(path)
    other = "0c9e7d2a-1b3f-4a5e-8d6c-7f8e9a0b1c2d"
    replacement = tmp_path / "replacement.jsonl"
    write(replacement, conversation(1, session=other))

    os.replace(replacement, path)
    replaced = ingest(path)

    assert replaced.files is not None
    assert replaced.files.rewritten == 1
    assert stored() == fresh(path)
    assert list(Session.objects.filter(source__name="local").values_list("external_id", flat=True)) == [other]


def test_a_copy_put_in_the_file_s_place_with_the_same_bytes_is_read_from_the_offset(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    lines = conversation(3)
    write(path, lines)
    ingest(path)
    copy = tmp_path / "copy.jsonl"
    write(copy, [*lines, *call(4, read=22_000, write=500)])

    os.replace(copy, path)
    copied = ingest(path)

    assert copied.files is not None
    assert copied.files.resumed == 1
    assert copied.files.rewritten == 0
    assert copied.requests_added == 1
    assert stored() == {SESSION: fresh(path)[SESSION]}


def test_a_file_that_vanished_is_named_and_the_others_still_ingested(tmp_path: Path) -> None:
    kept = tmp_path / f"{SESSION}.jsonl"
    write(kept, conversation(1))
    gone = tmp_path / "gone.jsonl"

    summary = ingest_paths(paths=[gone, kept], source_name="local", incremental=True)

    assert [str(error) for error in summary.errors] == [f"{gone}: path: no such file or folder"]
    assert summary.requests_added == 1


CODEX_ROLLOUTS = Path(__file__).resolve().parents[1] / "projections/formats/fixtures/codex/sessions"


def test_a_grown_codex_rollout_is_read_from_its_offset(tmp_path: Path) -> None:
    rollout = next(CODEX_ROLLOUTS.rglob("*019b0c3d-0000-7000-8000-00000000000b.jsonl"))
    lines = rollout.read_bytes().splitlines(keepends=True)
    path = tmp_path / rollout.name
    write(path, lines[: len(lines) // 2])
    ingest(path)

    append(path, b"".join(lines[len(lines) // 2 :]))
    grown = ingest(path)

    assert grown.files is not None
    assert grown.files.resumed == 1
    assert grown.requests_added > 0
    assert stored() == fresh(path)


def test_a_new_file_whose_first_line_is_half_written_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    first, *rest = conversation(1)
    write(path, [first[:40]])

    waiting = ingest(path)
    append(path, first[40:] + b"".join(rest))
    whole = ingest(path)

    assert waiting.files is not None
    assert waiting.files.waiting == 1
    assert waiting.sessions == 0
    assert not Session.objects.filter(source__name="local").exclude(external_id=SESSION).exists()
    assert whole.requests_added == 1


def test_a_grown_dsh_log_is_read_from_its_offset(tmp_path: Path) -> None:
    log = write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=3)
    lines = log.read_bytes().splitlines(keepends=True)
    write(log, lines[: len(lines) // 2])
    ingest(log)

    append(log, b"".join(lines[len(lines) // 2 :]))
    grown = ingest(log)

    assert grown.files is not None
    assert grown.files.resumed == 1
    assert grown.events_added == len(lines) - len(lines) // 2
    assert stored() == fresh(log)


def test_a_rewritten_file_s_session_keeps_what_a_grown_file_read_after_it_holds(tmp_path: Path) -> None:
    # The other file has grown as well, so it is queued to be taken up from its state: rewriting
    # the first forgets that state, and the second is read whole instead, in the same walk.
    lines = conversation(4)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(first, lines[:4])
    write(second, lines[:6])
    ingest(tmp_path)

    write(first, lines[:1])
    write(second, lines)
    again = ingest(tmp_path)

    assert again.errors == []
    assert again.files is not None
    assert (again.files.rewritten, again.files.resumed) == (1, 0)
    assert stored() == fresh(tmp_path)
    # Both files' states are recorded as read: the next ingest skips them.
    unchanged = ingest(tmp_path)
    assert unchanged.files is not None
    assert unchanged.files.unchanged == 2


def test_a_rewritten_file_s_session_keeps_what_another_file_holds_of_it(tmp_path: Path) -> None:
    # Two files holding lines of one session (a transcript and a copy that went on): rewriting the
    # first deletes the session, and the second is read again, so nothing it holds is lost.
    lines = conversation(3)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(first, lines[:4])
    write(second, lines)
    ingest(tmp_path)

    write(first, lines[:1])
    again = ingest(tmp_path)

    assert again.files is not None
    assert again.files.rewritten == 1
    assert stored() == fresh(tmp_path)
    assert Request.objects.filter(session__source__name="local").count() == 3
