from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from projections.formats.traffic.captures import ANTHROPIC_FORMAT, OPENAI_FORMAT, read_capture
from tests.projections.formats.conftest import FIXTURES, drain


def test_chat_captures_group_interleaved_records_by_session_id() -> None:
    sessions = list(read_capture(FIXTURES / "openai-chat.jsonl", OPENAI_FORMAT))
    summary = []
    for session in sessions:
        events, requests, errors = drain(session)
        summary.append((session.external_id, [r.key for r in requests], [e.seq for e in events], errors))
    assert summary == [
        ("conv-1", ["chatcmpl-1", "chatcmpl-3"], [0, 1], []),
        ("conv-2", ["chatcmpl-2"], [0], []),
    ]


def test_chat_usage_takes_cached_tokens_out_of_the_prompt_count() -> None:
    session = next(read_capture(FIXTURES / "openai-chat.jsonl", OPENAI_FORMAT))
    _, requests, _ = drain(session)
    first, streamed = requests
    assert first.usage is not None
    assert (first.usage.uncached_input, first.usage.cache_read, first.usage.output) == (128, 1920, 5)
    assert (first.provider, first.platform, first.api) == ("openai", "openai", "chat")
    assert first.first_token_at == datetime(2026, 3, 2, 9, 0, 0, 400000, tzinfo=UTC)
    assert first.body is not None
    assert first.body["prompt_cache_key"] == "k"
    assert streamed.usage is not None
    assert (streamed.usage.uncached_input, streamed.usage.cache_read) == (52, 2048)


def test_responses_usage_and_an_impossible_cached_count_is_a_line_error() -> None:
    (session,) = list(read_capture(FIXTURES / "openai-responses.jsonl", OPENAI_FORMAT))
    events, requests, errors = drain(session)
    assert requests[0].api == "responses"
    assert requests[0].usage is not None
    assert (requests[0].usage.uncached_input, requests[0].usage.cache_read) == (476, 1024)
    assert [(e.line, e.field) for e in errors] == [(2, "usage.input_tokens_details.cached_tokens")]
    assert requests[1].usage is None
    assert len(events) == 2


def test_anthropic_capture_with_epoch_millisecond_times() -> None:
    (session,) = list(read_capture(FIXTURES / "anthropic-capture.jsonl", ANTHROPIC_FORMAT))
    _, requests, _ = drain(session)
    (request,) = requests
    assert (request.key, request.provider, request.api) == ("msg_a1", "anthropic", "messages")
    assert request.started_at == datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert request.first_token_at == datetime(2026, 3, 1, 8, 0, 0, 800000, tzinfo=UTC)
    assert request.usage is not None
    assert request.usage.cache_write == 1100


def test_a_bare_responses_body_with_a_status_word_is_not_taken_for_an_http_envelope(tmp_path: Path) -> None:
    capture = tmp_path / "responses.jsonl"
    record = {
        "started_at": "2026-03-03T08:00:00Z",
        "request": {"model": "gpt-5", "input": "hi"},
        "response": {
            "id": "resp_9",
            "object": "response",
            "status": "completed",
            "model": "gpt-5",
            "usage": {
                "input_tokens": 2000,
                "input_tokens_details": {"cached_tokens": 1024},
                "output_tokens": 7,
            },
        },
    }
    capture.write_text(json.dumps(record) + "\n")
    (session,) = list(read_capture(capture, OPENAI_FORMAT))
    _, requests, errors = drain(session)
    assert errors == []
    assert requests[0].usage is not None
    assert (requests[0].usage.uncached_input, requests[0].usage.cache_read) == (976, 1024)
