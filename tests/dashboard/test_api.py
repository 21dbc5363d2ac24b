from __future__ import annotations

import gzip
import io
import json
import tracemalloc
import zlib
from typing import Any

import pytest
from django.test import Client
from django.test.utils import override_settings
from django.urls import reverse
from kombu.exceptions import OperationalError

from dashboard.access.tokens import token_create, token_revoke
from dashboard.ingest import followups
from dashboard.ingest.api.body import BodyRejected, body_read
from dashboard.models import ApiToken, Event, Request, Session, Source
from tests.dashboard.logs import dsh_lines

pytestmark = pytest.mark.django_db
URL = "/api/v1/ingest"


@pytest.fixture
def secret() -> str:
    source = Source.objects.create(name="farm")
    _token, value = token_create(source=source, name="host-1", created_by=None)
    return value


def ndjson(lines: list[Any]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def post(client: Client, secret: str | None, body: bytes, **headers: str) -> Any:
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    return client.post(URL, data=body, content_type="application/x-ndjson", headers=headers)


def anthropic_call(message_id: str, *, read: int, write: int, session: str | None = "s1") -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "request",
        "request": {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 100,
            "system": "Be terse.",
            "messages": [{"role": "user", "content": "hello"}],
        },
        "response": {
            "id": message_id,
            "type": "message",
            "model": "claude-sonnet-4-20250514",
            "usage": {
                "input_tokens": 12,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
                "output_tokens": 7,
            },
        },
        "started_at": "2026-01-01T00:00:05Z",
    }
    if session is not None:
        line["session"] = session
    return line


def test_the_endpoint_is_reversible_by_name() -> None:
    assert reverse("api_ingest") == URL


def test_it_stores_a_session_and_answers_what_it_accepted(client: Client, secret: str) -> None:
    response = post(client, secret, ndjson(dsh_lines("s1", turns=2)))
    assert response.status_code == 200
    body = response.json()
    assert body["accepted"] == 5
    assert body["duplicates"] == 0
    assert body["errors"] == []
    assert body["analysis"] == "queued"
    session = Session.objects.get(external_id="s1")
    assert session.source.name == "farm"
    assert session.format == "dsh"
    assert list(Event.objects.filter(session=session).values_list("seq", flat=True)) == [0, 1, 2, 3, 4]


def test_it_answers_401_without_a_token(client: Client, secret: str) -> None:
    response = post(client, None, ndjson(dsh_lines("s1", turns=1)))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not Session.objects.exists()


@pytest.mark.parametrize("header", ["Bearer csk_wrongwrongwrongwrongwrong", "Basic dXNlcjpwdw==", "Bearer"])
def test_it_answers_401_to_a_wrong_token(client: Client, secret: str, header: str) -> None:
    response = client.post(
        URL,
        data=ndjson(dsh_lines("s1", turns=1)),
        content_type="application/x-ndjson",
        headers={"Authorization": header},
    )
    assert response.status_code == 401
    assert "WWW-Authenticate" in response
    assert not Session.objects.exists()


def test_it_answers_401_to_a_revoked_token(client: Client, secret: str) -> None:
    token_revoke(token=ApiToken.objects.get(), now=ApiToken.objects.get().created_at)
    response = post(client, secret, ndjson(dsh_lines("s1", turns=1)))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_it_records_when_the_token_was_used(client: Client, secret: str) -> None:
    post(client, secret, ndjson(dsh_lines("s1", turns=1)))
    assert ApiToken.objects.get().last_used_at is not None


def test_it_answers_405_to_other_methods(client: Client, secret: str) -> None:
    response = client.get(URL, headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_it_accepts_a_gzip_body(client: Client, secret: str) -> None:
    response = post(client, secret, gzip.compress(ndjson(dsh_lines("s1", turns=2))), Content_Encoding="gzip")
    assert response.status_code == 200
    assert response.json()["accepted"] == 5


def test_it_refuses_an_unknown_content_encoding(client: Client, secret: str) -> None:
    response = post(client, secret, ndjson(dsh_lines("s1", turns=1)), Content_Encoding="br")
    assert response.status_code == 415


def test_it_refuses_broken_gzip_with_400(client: Client, secret: str) -> None:
    packed = gzip.compress(ndjson(dsh_lines("s1", turns=2)))
    assert post(client, secret, packed[: len(packed) // 2], Content_Encoding="gzip").status_code == 400
    assert post(client, secret, b"not gzip at all", Content_Encoding="gzip").status_code == 400
    assert not Session.objects.exists()


@override_settings(CACHESCOPE_API_MAX_BYTES=4096)
def test_it_refuses_a_body_over_the_limit_with_413(client: Client, secret: str) -> None:
    big = ndjson(dsh_lines("s1", turns=60))
    assert len(big) > 4096
    response = post(client, secret, big)
    assert response.status_code == 413
    assert "4096" in response.json()["error"]
    assert not Session.objects.exists()


@override_settings(CACHESCOPE_API_MAX_BYTES=65536)
def test_it_refuses_a_gzip_bomb_with_413(client: Client, secret: str) -> None:
    bomb = gzip.compress(ndjson(dsh_lines("s1", turns=1)) + b" " * 8_000_000)
    assert len(bomb) < 65536
    response = post(client, secret, bomb, Content_Encoding="gzip")
    assert response.status_code == 413
    assert "decompressed" in response.json()["error"]
    assert not Session.objects.exists()


def test_a_gzip_bomb_is_refused_in_bounded_memory() -> None:
    inflated = 256 * 1024 * 1024
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1024 * 1024)
    bomb = b"".join(packer.compress(block) for _ in range(inflated // len(block))) + packer.flush()
    tracemalloc.start()
    try:
        with pytest.raises(BodyRejected) as refused:
            body_read(
                stream=io.BytesIO(bomb), content_length=len(bomb), content_encoding="gzip", max_bytes=64 << 20
            )
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.status == 413
    # The decompressed bytes spool to disk past a few MB; memory stays far below the limit.
    assert peak < 24 << 20


def test_concatenated_gzip_members_are_one_body() -> None:
    lines = ndjson(dsh_lines("s1", turns=2))
    half = lines.index(b"\n", len(lines) // 2) + 1
    body = gzip.compress(lines[:half]) + gzip.compress(lines[half:])
    with body_read(
        stream=io.BytesIO(body), content_length=None, content_encoding="gzip", max_bytes=1 << 20
    ) as spool:
        assert spool.read() == lines


def test_it_refuses_a_body_that_is_not_ndjson_with_400(client: Client, secret: str) -> None:
    response = post(client, secret, b"<html>hello</html>\n")
    assert response.status_code == 400
    assert "line 1" in response.json()["error"]
    assert post(client, secret, b"").status_code == 400
    assert post(client, secret, b"[1, 2]\n").status_code == 400


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_stored(
    client: Client, secret: str
) -> None:
    lines: list[Any] = dsh_lines("s1", turns=2)
    lines[2] = {**lines[2], "seq": "two"}
    lines[3] = {key: value for key, value in lines[3].items() if key != "data"}
    body = ndjson(lines).replace(b'"type": "user/message", "data": {"id": "u2"', b"{oops", 1)
    response = post(client, secret, body)
    assert response.status_code == 200
    errors = response.json()["errors"]
    assert [(e["line"], e["field"]) for e in errors] == [(3, "seq"), (4, "data"), (5, "line")]
    assert all(e["message"] for e in errors)
    assert response.json()["accepted"] == 2


def test_an_event_line_before_any_header_is_an_error(client: Client, secret: str) -> None:
    lines = dsh_lines("s1", turns=1)
    response = post(client, secret, ndjson(lines[1:]))
    errors = response.json()["errors"]
    assert {e["line"] for e in errors} == {1, 2, 3}
    assert errors[0]["field"] == "type"


def test_a_header_with_an_unknown_version_is_reported(client: Client, secret: str) -> None:
    lines = dsh_lines("s1", turns=1)
    lines[0]["version"] = 99
    errors = post(client, secret, ndjson(lines)).json()["errors"]
    assert errors[0]["line"] == 1
    assert errors[0]["field"] == "version"


def test_the_same_batch_twice_adds_nothing_the_second_time(client: Client, secret: str) -> None:
    body = ndjson([*dsh_lines("s1", turns=2), anthropic_call("msg_1", read=0, write=2000)])
    first = post(client, secret, body).json()
    second = post(client, secret, body).json()
    assert first["accepted"] == 6
    assert second["accepted"] == 0
    assert (second["duplicate_events"], second["duplicate_requests"], second["duplicates"]) == (5, 1, 6)
    assert Event.objects.count() == 5
    assert Request.objects.count() == 1


def test_a_session_split_over_two_batches_is_stored_whole(client: Client, secret: str) -> None:
    lines = dsh_lines("s1", turns=3)
    header, events = lines[0], lines[1:]
    first = post(client, secret, ndjson([header, *events[:3]])).json()
    second = post(client, secret, ndjson([header, *events[3:]])).json()
    assert (first["accepted"], second["accepted"]) == (3, 4)
    session = Session.objects.get()
    assert list(session.events.values_list("seq", flat=True)) == list(range(7))
    assert session.event_count == 7


def test_a_request_line_is_stored_with_its_usage_in_its_session(client: Client, secret: str) -> None:
    body = ndjson([dsh_lines("s1", turns=1)[0], anthropic_call("msg_1", read=1000, write=300, session=None)])
    answer = post(client, secret, body).json()
    assert answer["errors"] == []
    call = Request.objects.get()
    assert call.session.external_id == "s1"
    assert call.key == "msg_1"
    assert (call.uncached_input_tokens, call.cache_read_tokens, call.cache_write_5m_tokens) == (12, 1000, 300)
    assert call.model == "claude-sonnet-4-20250514"
    assert call.has_body


def test_a_request_line_may_name_a_session_without_a_header(client: Client, secret: str) -> None:
    answer = post(
        client, secret, ndjson([anthropic_call("msg_9", read=0, write=10, session="proxy-7")])
    ).json()
    assert answer["accepted"] == 1
    assert Session.objects.get().format == "anthropic-capture"


def test_a_request_line_without_an_id_is_deduplicated_by_its_content(client: Client, secret: str) -> None:
    line = anthropic_call("", read=0, write=10, session="proxy-7")
    del line["response"]["id"]
    post(client, secret, ndjson([line]))
    again = post(client, secret, ndjson([line])).json()
    assert (again["accepted"], again["duplicates"], again["duplicate_requests"]) == (0, 1, 1)


def test_a_request_line_without_a_session_is_an_error(client: Client, secret: str) -> None:
    errors = post(client, secret, ndjson([anthropic_call("msg_1", read=0, write=1, session=None)])).json()[
        "errors"
    ]
    assert [(e["line"], e["field"]) for e in errors] == [(1, "session")]


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_is_down_answers_202_and_keeps_the_data(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = Source.objects.create(name="farm")
    _token, secret = token_create(source=source, name="host-1", created_by=None)
    enqueued: list[int] = []

    def broker_down(session_ids: list[int]) -> None:
        enqueued.extend(session_ids)
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(followups, "_FOLLOWUPS", [broker_down])
    body = ndjson([*dsh_lines("s1", turns=1), *dsh_lines("s2", turns=1)])
    response = post(client, secret, body)
    assert response.status_code == 202
    answer = response.json()
    assert answer["analysis"] == "pending"
    assert "stored" in answer["message"]
    assert answer["accepted"] == 6
    assert Event.objects.count() == 6
    assert len(enqueued) == 2

    # Once the broker is back, sending the session again enqueues its follow-ups.
    monkeypatch.setattr(followups, "_FOLLOWUPS", [enqueued.extend])
    again = post(client, secret, ndjson(dsh_lines("s1", turns=1)))
    assert again.status_code == 200
    assert again.json()["analysis"] == "queued"
    assert enqueued[-1] == Session.objects.get(external_id="s1").pk


def test_the_api_needs_no_csrf_token_or_login(secret: str) -> None:
    client = Client(enforce_csrf_checks=True)
    assert post(client, secret, ndjson(dsh_lines("s1", turns=1))).status_code == 200


def test_a_request_line_keeps_the_provider_s_stated_miss_reason_and_the_client_release(
    client: Client, secret: str
) -> None:
    line = anthropic_call("msg_1", read=0, write=300)
    line["request"] = {
        "headers": {"User-Agent": "claude-cli/2.1.40 (external, cli)"},
        "body": line["request"],
    }
    line["response"]["diagnostics"] = {
        "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 280}
    }
    answer = post(client, secret, ndjson([line])).json()
    assert answer["errors"] == []
    call = Request.objects.get()
    assert (call.provider_miss_reason, call.provider_missed_tokens) == ("tools_changed", 280)
    assert call.client_version == "claude-code 2.1.40"
    assert call.session.client_version == "claude-code 2.1.40"
