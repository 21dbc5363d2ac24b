"""The recording proxy against a fake model API on loopback: forwarding, streaming, storing, failing."""

from __future__ import annotations

import http.client
import json
import socket
import time
from contextlib import closing
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError, OperationalError

from dashboard.ingest.files import ingest_paths
from dashboard.ingest.recorded import ingest_recorded
from dashboard.ingest.recording.archive import resume_conversations
from dashboard.ingest.recording.diagnose import BETA
from dashboard.ingest.recording.spool import Spool
from dashboard.models import Request, Session
from tests.dashboard.recording.conftest import TIMEOUT, call
from tests.dashboard.recording.fake_upstream import FakeUpstream

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]


def turn(*texts: str, stream: bool = False) -> dict[str, Any]:
    """A Messages request whose conversation alternates user and assistant texts, marker on the last."""
    messages: list[dict[str, Any]] = []
    for index, text in enumerate(texts):
        role = "user" if index % 2 == 0 else "assistant"
        messages.append({"role": role, "content": [{"type": "text", "text": text}]})
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
    }
    if stream:
        body["stream"] = True
    return body


def test_a_stream_reaches_the_client_byte_for_byte_before_the_upstream_has_finished(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    upstream.hold_last_event = True
    recording = start_recording(upstream=upstream.url)
    with closing(http.client.HTTPConnection("127.0.0.1", recording.port, timeout=TIMEOUT)) as connection:
        body = json.dumps(turn("hi", stream=True)).encode()
        connection.request("POST", "/v1/messages?beta=true", body=body)
        response = connection.getresponse()
        received = b""
        while b"event: message_start" not in received:
            chunk = response.read1(65536)
            assert chunk, "the stream ended before its first event"
            received += chunk
        # The upstream is still holding its last event back: what arrived so far was not buffered.
        assert not upstream.sent
        assert b"message_stop" not in received
        upstream.release.set()
        received += response.read()

    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"
    assert received == upstream.sent[0]
    recording.settle(1)
    stored = Request.objects.get()
    assert stored.key == "req_fake00001"
    assert (stored.cache_read_tokens, stored.cache_write_5m_tokens, stored.output_tokens) == (4096, 2048, 9)
    assert stored.has_body
    assert stored.started_at is not None
    assert stored.first_token_at is not None
    assert stored.first_token_at >= stored.started_at


def test_a_call_is_forwarded_unchanged_without_diagnose(upstream: FakeUpstream, start_recording: Any) -> None:
    recording = start_recording(upstream=upstream.url)
    raw = json.dumps(turn("hi"), indent=1).encode()
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test", "X-Custom": "kept"}
    answer = call(recording.port, "/v1/messages?beta=true", raw, headers)

    assert answer.status == 200
    received = upstream.received[0]
    assert received.body == raw
    assert received.path_qs == "/v1/messages?beta=true"
    assert received.header("x-api-key") == "sk-ant-test"
    assert received.header("X-Custom") == "kept"
    assert received.header("anthropic-version") == "2023-06-01"
    assert received.header("anthropic-beta") is None
    assert received.header("host") == f"127.0.0.1:{upstream.port}"


def test_diagnose_adds_only_the_diagnostics_field_and_its_beta(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url, diagnose=True)
    raw = json.dumps(turn("hi"), indent=1).encode()
    call(recording.port, "/v1/messages", raw, {"anthropic-beta": "oauth-2025-04-20", "x-api-key": "k"})

    received = upstream.received[0]
    sent = json.loads(received.body)
    assert sent.pop("diagnostics") == {"previous_message_id": None}
    assert sent == json.loads(raw)
    # Every byte the client sent is still there, in order, after the spliced-in member.
    assert received.body.replace(b'"diagnostics":{"previous_message_id":null},', b"", 1) == raw
    assert received.header("anthropic-beta") == f"oauth-2025-04-20,{BETA}"


def test_diagnose_chains_previous_message_ids_within_each_of_two_interleaved_conversations(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url, diagnose=True)
    calls = [
        ("a", turn("refactor the parser", stream=True)),
        ("b", turn("write the changelog")),
        ("a", turn("refactor the parser", "done", "now the tests", stream=True)),
        ("b", turn("write the changelog", "done", "shorter")),
        ("a", turn("refactor the parser", "done", "now the tests", "done", "commit")),
    ]
    previous: dict[str, str | None] = {"a": None, "b": None}
    for conversation, body in calls:
        call(recording.port, "/v1/messages", body)
        sent = json.loads(upstream.received[-1].body)
        assert sent["diagnostics"] == {"previous_message_id": previous[conversation]}, conversation
        previous[conversation] = f"msg_fake{len(upstream.received):05d}"

    recording.settle(5)
    sessions = {s.request_count: s for s in Session.objects.filter(source__name="recorded")}
    assert set(sessions) == {3, 2}
    first_calls = [r.key for r in Request.objects.filter(session=sessions[3]).order_by("ordinal")]
    assert first_calls == ["req_fake00001", "req_fake00003", "req_fake00005"]


def test_the_session_header_names_the_session_and_is_not_forwarded(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url)
    call(recording.port, "/v1/messages", turn("one"), {"x-cachescope-session": "my-run"})
    call(recording.port, "/v1/messages", turn("something else"), {"x-cachescope-session": "my-run"})
    recording.settle(2)

    assert all(r.header("x-cachescope-session") is None for r in upstream.received)
    session = Session.objects.get(external_id="my-run")
    assert session.request_count == 2
    assert session.format == "claude-trace"


def test_openai_chat_and_responses_calls_are_recorded(upstream: FakeUpstream, start_recording: Any) -> None:
    recording = start_recording(upstream=upstream.url)
    chat = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    responses = {"model": "gpt-4.1", "input": [{"role": "user", "content": "hello"}]}
    assert call(recording.port, "/v1/chat/completions", chat, {"authorization": "Bearer sk-x"}).status == 200
    answer = call(recording.port, "/v1/responses", responses, {"accept-encoding": "gzip"})
    assert answer.headers["content-encoding"] == "gzip"
    recording.settle(2)

    stored = {r.api: r for r in Request.objects.all()}
    assert stored["chat"].cache_read_tokens == 1280
    assert stored["responses"].cache_read_tokens == 1024
    assert {r.session.format for r in stored.values()} == {"openai-capture"}


def test_credentials_are_never_stored_nor_spooled(upstream: FakeUpstream, start_recording: Any) -> None:
    secrets = {
        "x-api-key": "sk-ant-secret-one",
        "authorization": "Bearer sk-secret-two",
        "cookie": "session=secret-three",
        "x-goog-api-key": "secret-four",
        "x-refresh-token": "secret-five",
        "x-recording-pass": "secret-six",
    }
    down = {"value": True}

    def flaky_store(**kwargs: Any) -> Any:
        if down["value"]:
            raise OperationalError("database is locked")
        return ingest_recorded(**kwargs)

    recording = start_recording(
        upstream=upstream.url, store=flaky_store, token="secret-six", token_header="x-recording-pass"
    )
    for text in ("first", "second"):
        answer = call(recording.port, "/v1/messages?key=secret-seven", turn(text, stream=True), secrets)
        assert answer.status == 200
    assert upstream.received[0].header("x-api-key") == "sk-ant-secret-one"
    assert upstream.received[0].header("x-recording-pass") is None
    recording.settle(2)
    spooled = "".join(path.read_text() for path in recording.spool.pending())
    assert "req_fake00001" in spooled
    down["value"] = False
    deadline = time.monotonic() + TIMEOUT
    while recording.spool.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Request.objects.count() == 2

    dump = StringIO()
    call_command("dumpdata", "dashboard", stdout=dump)
    archived = "".join(path.read_text() for path in recording.archive.folder.iterdir())
    assert "req_fake00002" in archived
    for secret in [*secrets.values(), "secret-seven"]:
        assert secret.split()[-1] not in spooled
        assert secret.split()[-1] not in dump.getvalue()
        assert secret.split()[-1] not in archived


def test_calls_are_spooled_while_the_database_is_away_and_stored_in_order_when_it_is_back(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    down = {"value": True}

    def flaky_store(**kwargs: Any) -> Any:
        if down["value"]:
            raise OperationalError("could not connect to server")
        return ingest_recorded(**kwargs)

    recording = start_recording(upstream=upstream.url, store=flaky_store)
    bodies = [turn("plan"), turn("plan", "ok", "go"), turn("plan", "ok", "go", "ok", "ship")]
    for body in bodies[:2]:
        assert call(recording.port, "/v1/messages", body).status == 200
    recording.settle(2)
    assert len(recording.spool.pending()) >= 1
    assert recording.recorder.stats.spooled == 2
    assert Request.objects.count() == 0

    down["value"] = False
    assert call(recording.port, "/v1/messages", bodies[2]).status == 200
    recording.settle(3)
    assert recording.spool.pending() == []
    keys = list(Request.objects.order_by("ordinal").values_list("key", flat=True))
    assert keys == ["req_fake00001", "req_fake00002", "req_fake00003"]
    assert Session.objects.get().request_count == 3


def test_a_full_spool_drops_the_batch_and_counts_it(
    upstream: FakeUpstream, start_recording: Any, tmp_path: Any
) -> None:
    def failing_store(**kwargs: Any) -> Any:
        raise OperationalError("the database is down")

    spool = Spool(tmp_path / "small-spool", max_files=1)
    recording = start_recording(upstream=upstream.url, store=failing_store, spool=spool)
    assert call(recording.port, "/v1/messages", turn("one")).status == 200
    recording.settle(1)
    assert call(recording.port, "/v1/messages", turn("unrelated")).status == 200
    recording.settle(2)

    assert len(spool.pending()) == 1
    assert recording.recorder.dropped == 1
    assert recording.recorder.stats.spooled == 1


def test_an_unreachable_upstream_answers_502_naming_it_at_once(start_recording: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    recording = start_recording(upstream=f"http://127.0.0.1:{closed_port}", connect_timeout=2.0)
    started = time.monotonic()
    answer = call(recording.port, "/v1/messages", turn("hi"))

    assert answer.status == 502
    assert f"127.0.0.1:{closed_port}" in answer.json()["error"]["message"]
    assert time.monotonic() - started < 2.0
    recording.settle(1)
    assert Request.objects.get().status == 502


def test_a_silent_upstream_answers_504(upstream: FakeUpstream, start_recording: Any) -> None:
    recording = start_recording(upstream=upstream.url + "/slow", read_timeout=0.3)
    started = time.monotonic()
    answer = call(recording.port, "/v1/messages", turn("hi"))

    assert answer.status == 504
    assert upstream.url in answer.json()["error"]["message"]
    assert time.monotonic() - started < 3.0


def test_a_client_that_goes_away_cancels_the_upstream_call(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    upstream.hold_last_event = True
    recording = start_recording(upstream=upstream.url)
    with closing(http.client.HTTPConnection("127.0.0.1", recording.port, timeout=TIMEOUT)) as connection:
        connection.request("POST", "/v1/messages", body=json.dumps(turn("hi", stream=True)).encode())
        response = connection.getresponse()
        assert b"message_start" in response.read1(65536)
        connection.sock.shutdown(socket.SHUT_RDWR)

    assert upstream.cancelled.wait(TIMEOUT)
    assert not upstream.sent


def test_a_wrong_or_missing_token_is_refused_before_anything_is_forwarded(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url, token="let-me-in", token_header="x-pass")
    assert call(recording.port, "/v1/messages", turn("hi")).status == 401
    assert call(recording.port, "/v1/messages", turn("hi"), {"x-pass": "wrong"}).status == 401
    assert call(recording.port, "/v1/messages", turn("hi"), {"x-pass": "let-me-in"}).status == 200
    assert len(upstream.received) == 1


def test_the_providers_miss_reason_is_stored_from_the_recorded_answer(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url, diagnose=True)
    agent = {"User-Agent": "claude-cli/2.1.38 (external, cli)"}
    call(recording.port, "/v1/messages", turn("plan", stream=True), agent)
    changed = turn("plan", "ok", "go", stream=True)
    changed["system"] = [{"type": "text", "text": "You are a careful coding agent. Today is Thursday."}]
    call(recording.port, "/v1/messages", changed, agent)
    call(recording.port, "/v1/messages", turn("plan", "ok", "go", "ok", "ship"), agent)
    recording.settle(3)

    stored = list(Request.objects.order_by("ordinal"))
    assert [r.provider_miss_reason for r in stored] == ["", "system_changed", "system_changed"]
    assert stored[1].provider_missed_tokens == 4096
    assert {r.client_version for r in stored} == {"claude-code 2.1.38"}
    assert stored[0].session.client_version == "claude-code 2.1.38"


def test_a_batch_that_can_never_be_stored_is_counted_and_does_not_hold_up_later_ones(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    refused = {"value": True}

    def store_refusing_once(**kwargs: Any) -> Any:
        if refused["value"]:
            refused["value"] = False
            raise IntegrityError("duplicate key value violates unique constraint")
        return ingest_recorded(**kwargs)

    recording = start_recording(upstream=upstream.url, store=store_refusing_once)
    assert call(recording.port, "/v1/messages", turn("one")).status == 200
    recording.settle(1)
    assert call(recording.port, "/v1/messages", turn("two")).status == 200
    recording.settle(2)

    assert recording.recorder.stats.failed == 1
    assert recording.spool.pending() == []
    assert list(Request.objects.values_list("key", flat=True)) == ["req_fake00002"]


def test_the_archive_is_a_claude_trace_log_that_ingests_as_the_same_session(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    recording = start_recording(upstream=upstream.url, diagnose=True)
    call(recording.port, "/v1/messages", turn("plan", stream=True))
    call(recording.port, "/v1/messages", turn("plan", "ok", "go"))
    recording.settle(2)
    session = Session.objects.get()

    [log] = list(recording.archive.folder.iterdir())
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert "event: message_start" in records[0]["response"]["body_raw"]
    assert records[1]["response"]["body"]["diagnostics"]["cache_miss_reason"]["type"] == "system_changed"
    again = ingest_paths(paths=[log], source_name="recorded")
    assert (again.sessions_unchanged, again.requests_added) == (1, 0)
    assert session.external_id == log.name.removesuffix(".jsonl")


def test_a_restarted_proxy_takes_up_the_conversations_it_was_recording(
    upstream: FakeUpstream, start_recording: Any
) -> None:
    first = start_recording(upstream=upstream.url)
    call(first.port, "/v1/messages", turn("plan", stream=True))
    first.settle(1)
    first.server.stop()
    first.recorder.stop()

    again = start_recording(upstream=upstream.url, diagnose=True)
    assert resume_conversations(again.server.proxy.conversations, again.archive.folder) == 1
    call(again.port, "/v1/messages", turn("plan", "ok", "go"))
    again.settle(1)

    assert json.loads(upstream.received[-1].body)["diagnostics"] == {"previous_message_id": "msg_fake00001"}
    assert Session.objects.get().request_count == 2
