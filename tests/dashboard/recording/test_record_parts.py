"""The recording proxy's parts on their own: grouping, headers, the diagnostics splice, listening, capture."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from dashboard.ingest.recorded import ingest_recorded
from dashboard.ingest.recording.archive import Archive, last_records
from dashboard.ingest.recording.capture import CapturedCall
from dashboard.ingest.recording.conversations import Conversations
from dashboard.ingest.recording.diagnose import BETA, wants_diagnostics, with_beta, with_diagnostics
from dashboard.ingest.recording.headers import (
    is_secret_name,
    stored_headers,
    stored_url,
    upstream_request_headers,
)
from dashboard.ingest.recording.listen import ListenError, check_exposure, parse_listen
from dashboard.ingest.recording.spool import Spool
from dashboard.models import Request
from projections.formats.anthropic.recorded import RecordedCall


def user(text: str, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_a_call_that_extends_a_conversation_joins_it_though_its_markers_moved() -> None:
    conversations = Conversations()
    first = conversations.place([user("fix the bug", marked=True)])
    second = conversations.place([user("fix the bug"), reply("done"), user("thanks", marked=True)])

    assert second.session_id == first.session_id
    assert first.previous_message_id is None


def test_a_new_conversation_opening_like_an_old_one_that_moved_on_starts_its_own_session() -> None:
    conversations = Conversations()
    old = conversations.place([user("hi")])
    conversations.place([user("hi"), reply("hello"), user("fix the bug")])
    fresh = conversations.place([user("hi")])

    assert fresh.session_id != old.session_id


def test_the_previous_message_is_the_latest_answer_of_the_same_conversation() -> None:
    conversations = Conversations()
    a = conversations.place([user("a")])
    conversations.answered(a.session_id, "msg_a1")
    b = conversations.place([user("b")])
    conversations.answered(b.session_id, "msg_b1")

    assert conversations.place([user("a"), reply("x"), user("a2")]).previous_message_id == "msg_a1"
    assert conversations.place([user("b"), reply("y"), user("b2")]).previous_message_id == "msg_b1"


def test_an_openai_previous_response_id_names_its_session() -> None:
    conversations = Conversations()
    first = conversations.place(["hello"])
    conversations.answered(first.session_id, "resp_1")

    assert conversations.place(["go on"], previous_response_id="resp_1").session_id == first.session_id


def test_the_oldest_sessions_are_forgotten_past_the_bound() -> None:
    conversations = Conversations(max_sessions=2)
    first = conversations.place([user("one")])
    conversations.place([user("two")])
    conversations.place([user("three")])

    assert conversations.place([user("one"), reply("x"), user("more")]).session_id != first.session_id


@pytest.mark.parametrize(
    "name",
    ["x-api-key", "Authorization", "Cookie", "set-cookie", "x-goog-api-key", "api_key", "X-Auth-Token"],
)
def test_credential_headers_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["anthropic-ratelimit-tokens-remaining", "user-agent", "anthropic-beta"])
def test_ordinary_headers_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_stored_headers_keep_neither_credentials_nor_the_token_header() -> None:
    headers = [("x-api-key", "k"), ("User-Agent", "claude-cli/2.1"), ("X-Pass", "t"), ("Connection", "close")]

    assert stored_headers(headers, drop=["x-pass"]) == {"User-Agent": "claude-cli/2.1"}
    assert (
        stored_url("https://h/v1/models/m:generate?key=abc&alt=sse")
        == "https://h/v1/models/m:generate?alt=sse"
    )


def test_upstream_headers_drop_hop_by_hop_and_the_proxys_own() -> None:
    headers = [
        ("Host", "127.0.0.1:8788"),
        ("Connection", "keep-alive, x-hop"),
        ("X-Hop", "1"),
        ("x-cachescope-session", "s"),
        ("x-api-key", "k"),
        ("Content-Length", "10"),
        ("anthropic-version", "2023-06-01"),
    ]

    assert upstream_request_headers(headers) == [("x-api-key", "k"), ("anthropic-version", "2023-06-01")]


def test_diagnostics_are_spliced_in_leaving_every_other_byte_alone() -> None:
    raw = b' {\n  "model": "m",\n  "messages": []\n}'
    spliced = with_diagnostics(raw, "msg_1")

    assert json.loads(spliced) == {
        "diagnostics": {"previous_message_id": "msg_1"},
        "model": "m",
        "messages": [],
    }
    assert spliced.replace(b'"diagnostics":{"previous_message_id":"msg_1"},', b"") == raw
    assert json.loads(with_diagnostics(b"{}", None)) == {"diagnostics": {"previous_message_id": None}}


def test_only_messages_posts_without_their_own_diagnostics_are_diagnosed() -> None:
    assert wants_diagnostics("POST", "/v1/messages", {"messages": []})
    assert not wants_diagnostics("POST", "/v1/messages", {"diagnostics": {"previous_message_id": None}})
    assert not wants_diagnostics("POST", "/v1/messages/count_tokens", {"messages": []})
    assert not wants_diagnostics("POST", "/v1/chat/completions", {"messages": []})
    assert not wants_diagnostics("POST", "/v1/messages", None)


def test_the_diagnostics_beta_joins_the_clients_betas_once() -> None:
    assert with_beta([("anthropic-beta", "oauth-2025-04-20")]) == [
        ("anthropic-beta", f"oauth-2025-04-20,{BETA}")
    ]
    assert with_beta([("anthropic-beta", BETA)]) == [("anthropic-beta", BETA)]
    assert with_beta([]) == [("anthropic-beta", BETA)]


def test_listening_beyond_loopback_is_refused_without_a_token() -> None:
    with pytest.raises(ListenError, match="not loopback"):
        check_exposure(parse_listen("0.0.0.0:8788"), "")
    check_exposure(parse_listen("0.0.0.0:8788"), "a-token")
    check_exposure(parse_listen("[::1]:8788"), "")
    check_exposure(parse_listen("localhost:0"), "")
    with pytest.raises(ListenError, match="HOST:PORT"):
        parse_listen("8788")


def test_the_record_command_refuses_to_start_on_a_public_address_without_a_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CACHESCOPE_RECORD_TOKEN", raising=False)
    with pytest.raises(CommandError, match="recording token"):
        call_command("record", "--listen", "0.0.0.0:0", "--token", "")


def test_a_gzip_answer_is_recorded_decoded_and_its_credentials_are_not() -> None:
    answer = {"id": "msg_1", "type": "message", "usage": {"input_tokens": 3, "output_tokens": 1}}
    captured = CapturedCall(
        call_id="c1",
        session_id="s1",
        method="POST",
        url="https://api.anthropic.com/v1/messages?beta=true",
        request_headers={"User-Agent": "claude-cli/2.1.38"},
        request_body=b'{"model": "m", "messages": []}',
        started_at=1_764_000_000.0,
        status=200,
        response_headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    captured.add_chunk(gzip.compress(json.dumps(answer).encode()), 1_764_000_001.0)

    record = captured.trace_record()
    assert record["response"]["body"] == answer
    assert record["request"]["body"] == {"model": "m", "messages": []}
    assert record["first_token_at"] == 1_764_000_001.0


def test_an_undecodable_answer_is_recorded_without_its_body_and_says_why() -> None:
    captured = CapturedCall(
        call_id="c1",
        session_id="s1",
        method="POST",
        url="https://api.anthropic.com/v1/messages",
        request_headers={},
        request_body=b"{}",
        started_at=1.0,
        status=200,
        response_headers={"content-encoding": "gzip"},
    )
    captured.add_chunk(b"not gzip at all", 2.0)

    record = captured.trace_record()
    assert "body" not in record["response"]
    assert "does not decompress" in record["cachescope"]["response_undecoded"]


def test_a_spooled_batch_reads_back_as_written(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    calls = [RecordedCall("c1", {"request": {"url": "u"}, "response": None})]
    assert spool.put("s1", calls)

    [path] = spool.pending()
    batch = spool.read(path)
    assert (batch.session_id, batch.calls) == ("s1", calls)
    path.write_text('{"session": "s1"}\nnot json\n')
    with pytest.raises(ValueError, match=":2: not a spooled call"):
        spool.read(path)


def test_a_spool_past_its_byte_bound_drops_and_counts(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", max_bytes=200)
    big = [RecordedCall("c1", {"request": {"body": "x" * 500}})]

    assert not spool.put("s1", big)
    assert spool.dropped_calls == 1
    assert spool.pending() == []


@pytest.mark.django_db
def test_ingesting_the_same_recorded_batch_twice_adds_nothing_the_second_time() -> None:
    record = {
        "request": {
            "timestamp": 1_764_000_000.0,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages",
            "headers": {},
            "body": {"model": "claude-sonnet-4-5-20250929", "messages": [{"role": "user", "content": "hi"}]},
        },
        "response": {
            "status_code": 200,
            "headers": {"request-id": "req_1"},
            "body": {"id": "msg_1", "type": "message", "usage": {"input_tokens": 3, "output_tokens": 1}},
        },
    }
    calls = [RecordedCall("c1", record)]
    first = ingest_recorded(source_name="rec", session_id="s1", calls=calls, path="proxy")
    again = ingest_recorded(source_name="rec", session_id="s1", calls=calls, path="proxy")

    assert (first.requests_added, first.events_added) == (1, 1)
    assert (again.requests_added, again.events_added) == (0, 0)
    assert Request.objects.get().key == "req_1"


def test_the_last_record_of_a_log_is_read_from_its_end_however_long(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    long_record = {"request": {"body": "x" * 200_000}, "n": 1}
    archive.append("s1", [RecordedCall("c0", {"n": 0}), RecordedCall("c1", long_record)])

    assert list(last_records(tmp_path)) == [("s1", long_record)]
    assert list(last_records(tmp_path, within_seconds=-1)) == []


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_archive_and_the_spool_are_readable_by_their_user_alone_whatever_the_umask(
    tmp_path: Path,
) -> None:
    previous = os.umask(0o022)  # the usual umask, which made them 0644 under 0755
    try:
        archive, spool = Archive(tmp_path / "archive"), Spool(tmp_path / "spool")
        assert archive.append("s1", [RecordedCall("c1", {"request": {"body": "a prompt"}})])
        assert spool.put("s1", [RecordedCall("c2", {"request": {"body": "another"}})])
    finally:
        os.umask(previous)

    [spooled] = spool.pending()
    assert (_mode(tmp_path / "archive"), _mode(archive.path("s1"))) == (0o700, 0o600)
    assert (_mode(tmp_path / "spool"), _mode(spooled)) == (0o700, 0o600)


def test_an_archive_an_older_release_left_open_is_closed_on_its_next_write(tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    archive = Archive(folder)
    archive.path("s1").write_text("{}\n")
    archive.path("s1").chmod(0o644)

    assert archive.append("s1", [RecordedCall("c1", {"n": 1})])

    assert (_mode(folder), _mode(archive.path("s1"))) == (0o700, 0o600)
    assert archive.path("s1").read_text() == '{}\n{"n": 1}\n'
