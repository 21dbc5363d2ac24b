"""The ingestion API under hostile and oversized bodies: each bad value is a line error naming its line
and field, the good sessions of the batch are stored, and a batch past the limits is refused with 413."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any

import psycopg.errors
import pytest
from django.db import OperationalError, close_old_connections, connection
from django.test import Client
from django.test.utils import override_settings

from dashboard.access.tokens import token_create
from dashboard.models import Block, Event, Request, Session, Source
from dashboard.storage.db_retry import is_retryable, retrying
from projections.formats.reading.limits import MAX_SEQ
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


def post(client: Client, secret: str, body: bytes) -> Any:
    return client.post(
        URL, data=body, content_type="application/x-ndjson", headers={"Authorization": f"Bearer {secret}"}
    )


def _with(lines: list[dict[str, Any]], index: int, **change: Any) -> list[dict[str, Any]]:
    lines = list(lines)
    lines[index] = {**lines[index], **change}
    return lines


def _errors(response: Any, field: str) -> list[dict[str, Any]]:
    return [e for e in response.json()["errors"] if e["field"] == field]


def test_a_short_body_with_a_huge_source_range_is_a_line_error_answered_at_once(
    client: Client, secret: str
) -> None:
    header, first = dsh_lines("wide", turns=1)[:2]
    body = ndjson([header, {**first, "sourceEventSeqs": [[0, 10_000_000]]}])
    started = time.monotonic()
    response = post(client, secret, body)
    assert time.monotonic() - started < 5
    assert response.status_code == 200
    (error,) = _errors(response, "sourceEventSeqs")
    assert error["line"] == 2


def test_a_line_nested_too_deep_is_a_line_error_and_the_good_session_is_stored(
    client: Client, secret: str
) -> None:
    deep = b'{"type": "user/message", "seq": 1, "time": 0, "data": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    body = ndjson(dsh_lines("good", turns=1)) + ndjson(dsh_lines("deep", turns=1)[:2]) + deep
    response = post(client, secret, body)
    assert response.status_code == 200
    (error,) = _errors(response, "json")
    assert "nested" in error["message"]
    assert Event.objects.filter(session__external_id="good").count() == 3
    assert Event.objects.filter(session__external_id="deep").count() == 1


def test_nul_and_lone_surrogates_are_replaced_with_a_notice_and_every_session_is_stored(
    client: Client, secret: str
) -> None:
    nul_title = _with(dsh_lines("nul", turns=1), 0, title="a\u0000b")
    body = ndjson(nul_title) + ndjson(dsh_lines("surrogate", turns=1)).replace(b"question 1", b"q \\ud800")
    body += ndjson(dsh_lines("plain", turns=1))
    response = post(client, secret, body)
    assert response.status_code == 200
    assert response.json()["errors"] == []
    assert {n["field"] for n in response.json()["notices"]} == {"json"}
    assert Session.objects.get(external_id="nul").title == "a\ufffdb"
    assert set(Session.objects.values_list("external_id", flat=True)) == {"nul", "surrogate", "plain"}


def test_a_seq_past_the_column_is_a_line_error_and_the_rest_is_stored(client: Client, secret: str) -> None:
    lines = dsh_lines("big", turns=1)
    body = ndjson([*lines, {**lines[-1], "seq": MAX_SEQ + 1}]) + ndjson(dsh_lines("other", turns=1))
    response = post(client, secret, body)
    assert response.status_code == 200
    (error,) = _errors(response, "seq")
    assert error["line"] == len(lines) + 1
    assert str(MAX_SEQ) in error["message"]
    assert Event.objects.filter(session__external_id="big").count() == len(lines) - 1
    assert Session.objects.filter(external_id="other").exists()


@pytest.mark.parametrize(
    ("index", "change", "field"),
    [
        (0, {"createdAt": "0001-01-01T00:00:00+05:00"}, "createdAt"),
        (1, {"time": "9999-12-31T23:59:00-05:00"}, "time"),
    ],
)
def test_a_time_outside_the_datetime_range_after_its_offset_is_a_line_error(
    client: Client, secret: str, index: int, change: dict[str, Any], field: str
) -> None:
    body = ndjson(_with(dsh_lines("odd-time", turns=1), index, **change)) + ndjson(dsh_lines("fine", turns=1))
    response = post(client, secret, body)
    assert response.status_code == 200
    (error,) = _errors(response, field)
    assert error["line"] == index + 1
    assert Session.objects.filter(external_id="fine").exists()


@override_settings(CACHESCOPE_API_MAX_SESSIONS=3)
def test_a_batch_of_more_sessions_than_the_limit_is_refused_with_413_and_nothing_stored(
    client: Client, secret: str
) -> None:
    body = b"".join(ndjson(dsh_lines(f"s{i}", turns=1)) for i in range(4))
    response = post(client, secret, body)
    assert response.status_code == 413
    assert "3 sessions" in response.json()["error"]
    assert not Session.objects.exists()
    assert (
        post(client, secret, b"".join(ndjson(dsh_lines(f"s{i}", turns=1)) for i in range(3))).status_code
        == 200
    )


@override_settings(CACHESCOPE_API_MAX_RECORDS=5)
def test_a_batch_of_more_events_than_the_limit_is_refused_with_413(client: Client, secret: str) -> None:
    response = post(client, secret, ndjson(dsh_lines("long", turns=3)))
    assert response.status_code == 413
    assert "5 events" in response.json()["error"]
    assert not Session.objects.exists()


def test_a_chunked_body_without_content_length_is_read(client: Client, secret: str) -> None:
    body = ndjson(dsh_lines("chunked", turns=1))
    response = client.generic(
        "POST",
        URL,
        data=b"",
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {secret}", "Transfer-Encoding": "chunked"},
        **{"wsgi.input": io.BytesIO(body)},
    )
    assert response.status_code == 200, response.content
    assert response.json()["events"] == 3


@override_settings(CACHESCOPE_API_MAX_BYTES=2048)
def test_a_chunked_body_past_the_byte_limit_is_refused_while_read(client: Client, secret: str) -> None:
    body = ndjson(dsh_lines("chunked", turns=40))
    assert len(body) > 2048
    response = client.generic(
        "POST",
        URL,
        data=b"",
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {secret}", "Transfer-Encoding": "chunked"},
        **{"wsgi.input": io.BytesIO(body)},
    )
    assert response.status_code == 413
    assert not Session.objects.exists()


def test_sessions_are_written_in_the_order_of_their_ids_whatever_the_body_order(
    client: Client, secret: str
) -> None:
    names = ["zeta", "alpha", "mu"]
    response = post(client, secret, b"".join(ndjson(dsh_lines(name, turns=1)) for name in names))
    assert response.status_code == 200
    assert list(Session.objects.order_by("pk").values_list("external_id", flat=True)) == sorted(names)


def _deadlock() -> OperationalError:
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


def test_a_deadlocked_transaction_is_run_again_and_other_errors_are_not() -> None:
    calls: list[int] = []
    waits: list[float] = []

    def work() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _deadlock()
        return "stored"

    assert retrying(work, sleep=waits.append) == "stored"
    assert len(calls) == 3
    assert len(waits) == 2
    assert is_retryable(_deadlock())
    assert not is_retryable(OperationalError("no such table"))

    def broken() -> None:
        calls.append(1)
        raise OperationalError("no such table")

    calls.clear()
    with pytest.raises(OperationalError, match="no such table"):
        retrying(broken, sleep=waits.append)
    assert len(calls) == 1


def test_a_deadlock_that_persists_is_raised_after_the_last_attempt() -> None:
    calls: list[int] = []

    def work() -> None:
        calls.append(1)
        raise _deadlock()

    with pytest.raises(OperationalError):
        retrying(work, attempts=3, sleep=lambda _s: None)
    assert len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_holding_the_same_sessions_in_opposite_orders_all_succeed() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlocks need PostgreSQL")
    source = Source.objects.create(name="farm")
    _token, secret = token_create(source=source, name="host-1", created_by=None)
    names = [f"shared-{i}" for i in range(12)]
    statuses: list[int] = []
    start = threading.Barrier(8)

    def send(index: int) -> None:
        order = names if index % 2 else list(reversed(names))
        lines = [dsh_lines(name, turns=2 + index) for name in order]
        body = b"".join(ndjson(session) for session in lines)
        try:
            start.wait()
            statuses.append(post(Client(), secret, body).status_code)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 8
    assert Session.objects.filter(external_id__in=names).count() == len(names)


def test_a_stated_miss_count_past_any_column_is_dropped_and_the_request_stored(
    client: Client, secret: str
) -> None:
    line = {
        "type": "request",
        "session": "s1",
        "request": {"model": "claude-sonnet-4-20250514", "messages": [{"role": "user", "content": "hi"}]},
        "response": {
            "id": "msg_1",
            "type": "message",
            "model": "claude-sonnet-4-20250514",
            "usage": {"input_tokens": 12, "output_tokens": 7},
            "diagnostics": {
                "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 2**70}
            },
        },
    }
    response = post(
        client, secret, ndjson([*dsh_lines("s1", turns=1), line]) + ndjson(dsh_lines("s2", turns=1))
    )
    assert response.status_code == 200
    stored = Request.objects.get(key="msg_1")
    assert stored.provider_miss_reason == "tools_changed"
    assert stored.provider_missed_tokens is None
    assert Session.objects.filter(external_id="s2").exists()


def test_new_blocks_are_inserted_in_hash_order_so_concurrent_batches_cannot_deadlock_on_them(
    client: Client, secret: str
) -> None:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 50} for i in range(9)
    ]
    line = {
        "type": "request",
        "session": "s1",
        "request": {"model": "claude-sonnet-4-20250514", "system": "Be terse.", "messages": messages},
        "response": {"id": "msg_1", "type": "message", "usage": {"input_tokens": 900, "output_tokens": 7}},
    }
    inserted: list[list[Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("INSERT") and 'INTO "dashboard_block"' in sql:
            inserted.append(list(params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert post(client, secret, ndjson([line])).status_code == 200
    (params,) = inserted
    stored = set(Block.objects.values_list("hash", flat=True))
    # PostgreSQL's bulk insert passes each column as one array (UNNEST); SQLite passes rows' values.
    values = [v for value in params for v in (value if isinstance(value, list) else [value])]
    written = [value for value in values if isinstance(value, str) and value in stored]
    assert len(written) == len(stored) > 5
    assert written == sorted(written)


def test_a_batch_that_repeats_an_event_counts_a_duplicate_and_stores_every_session(
    client: Client, secret: str
) -> None:
    lines = dsh_lines("repeats", turns=1)
    changed = {**lines[2], "type": "user/other", "ignorable": True}
    body = ndjson([*lines, lines[1], changed]) + ndjson(dsh_lines("after", turns=1))
    response = post(client, secret, body)
    assert response.status_code == 200
    assert (response.json()["duplicates"], response.json()["duplicate_events"]) == (2, 2)
    (error,) = _errors(response, "seq")
    assert error["line"] == len(lines) + 2
    assert "the stored log is kept" in error["message"]
    assert Event.objects.filter(session__external_id="repeats").count() == len(lines) - 1
    assert Session.objects.filter(external_id="after").exists()


@pytest.mark.django_db(transaction=True)
def test_a_session_the_database_refuses_is_rolled_back_alone() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the refusal is a PostgreSQL trigger")
    # A trigger stands for any value the readers let through and the database refuses.
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN "
            "IF NEW.title = 'poison' THEN RAISE EXCEPTION 'out of range' USING ERRCODE = '22003'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON dashboard_session "
            "FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
        )
    try:
        source = Source.objects.create(name="farm")
        _token, secret = token_create(source=source, name="host-1", created_by=None)
        poisoned = _with(dsh_lines("bad", turns=1), 0, title="poison")
        body = ndjson(dsh_lines("a-good", turns=1)) + ndjson(poisoned) + ndjson(dsh_lines("z-good", turns=1))
        response = post(Client(), secret, body)
        assert response.status_code == 200
        (error,) = _errors(response, "session")
        assert "refused" in error["message"]
        assert set(Session.objects.values_list("external_id", flat=True)) == {"a-good", "z-good"}
        assert not Event.objects.filter(session__external_id="bad").exists()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS refuse_poison ON dashboard_session")
            cursor.execute("DROP FUNCTION IF EXISTS refuse_poison()")
