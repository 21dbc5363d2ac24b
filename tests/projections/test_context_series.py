from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from projections.context_series import ContextRow, RequestFigures, context_rows, request_ref
from projections.normalized import EventRecord
from projections.request_breakdown import RequestBreakdown

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def event(seq: int, kind: str, **data: Any) -> EventRecord:
    return EventRecord(seq=seq, type=kind, time=T0, data=data)


def view(system: int = 0, messages: int = 0, **extra: int) -> dict[str, int]:
    return {"systemTokens": system, "messageTokens": messages, **extra}


def test_a_capture_row_takes_system_tools_and_messages_from_its_request_body() -> None:
    requests = {
        "req_a": RequestFigures(
            "claude-sonnet-4-20250514", "main", RequestBreakdown(3537, 9811, 1335), 15_036
        ),
        "req_b": RequestFigures("claude-3-5-haiku-20241022", "side", RequestBreakdown(0, 0, 10), 8),
    }
    steps = [
        (event(0, "cache/request", requestRef="req_a"), view()),
        (event(1, "cache/request", requestRef="req_b"), view()),
    ]
    main, side = context_rows(steps, requests)
    assert (main.system_tokens, main.tools_tokens, main.message_tokens) == (3537, 9811, 1335)
    assert (main.provider_prompt_tokens, main.context_window, main.basis) == (15_036, 200_000, "request body")
    assert (side.system_tokens, side.tools_tokens, side.lineage) == (0, 0, "side")


def test_a_side_call_does_not_replace_the_main_chain_s_figures_on_later_rows() -> None:
    requests = {
        "a": RequestFigures("claude-sonnet-4-20250514", "main", RequestBreakdown(10, 20, 30), 70),
        "b": RequestFigures("claude-3-5-haiku-20241022", "side", RequestBreakdown(0, 0, 5), 5),
    }
    steps = [
        (event(0, "cache/request", requestRef="a"), view()),
        (event(1, "cache/request", requestRef="b"), view()),
        (event(2, "cache/log"), view()),
    ]
    last = list(context_rows(steps, requests))[-1]
    assert (last.system_tokens, last.tools_tokens, last.message_tokens, last.provider_prompt_tokens) == (
        10,
        20,
        30,
        None,
    )


def test_a_usage_only_call_infers_system_and_tools_from_the_prompt_before_its_reply() -> None:
    requests = {"msg_1": RequestFigures("claude-opus-4-6", "main", None, 20_000)}
    steps = [
        (event(0, "user/message"), view(messages=500)),
        (event(1, "assistant/message", requestId="", messageId="msg_1"), view(messages=800)),
        (event(2, "tool/result"), view(messages=1_100)),
    ]
    rows = list(context_rows(steps, requests))
    assert rows[0].inferred_tokens is None
    assert (rows[1].system_tokens, rows[1].tools_tokens) == (None, None)
    assert rows[1].inferred_tokens == 20_000 - 500
    assert rows[2].inferred_tokens == 19_500
    assert rows[2].message_tokens == 1_100
    assert rows[2].total == 19_500 + 1_100
    assert rows[1].context_window == 1_000_000
    assert rows[1].to_json()["systemTokens"] is None
    assert rows[1].to_json()["inferredSystemToolsTokens"] == 19_500


def test_a_log_that_knows_its_system_prompt_is_not_inferred() -> None:
    requests = {"seq-1": RequestFigures("deepseek-chat", "main", None, 9_000)}
    steps = [
        (event(0, "system/message"), view(system=400)),
        (event(1, "assistant/message", turn=1, step=1), view(system=400, messages=300, toolsTokens=250)),
    ]
    rows = list(context_rows(steps, requests))
    assert [row.basis for row in rows] == ["log", "log"]
    assert (rows[1].system_tokens, rows[1].tools_tokens, rows[1].inferred_tokens) == (400, 250, None)
    assert rows[1].provider_prompt_tokens == 9_000
    assert rows[1].context_window == 128_000


def test_a_window_the_host_states_wins_over_the_table() -> None:
    requests = {"seq-1": RequestFigures("deepseek-chat", "main", None, 9_000)}
    steps = [
        (
            event(0, "request/context", provider="deepseek", model="deepseek-chat", contextWindow=64_000),
            view(system=4),
        ),
        (event(1, "assistant/message"), view(system=4, messages=5)),
    ]
    assert [row.context_window for row in context_rows(steps, requests)] == [64_000, 64_000]


def test_a_large_prompt_anywhere_in_the_session_gives_the_whole_session_the_long_window() -> None:
    requests = {
        "m1": RequestFigures("claude-sonnet-4-5-20250929", "main", None, 50_000),
        "m2": RequestFigures("claude-sonnet-4-5-20250929", "main", None, 240_000),
    }
    steps = [
        (event(0, "assistant/message", messageId="m1"), view(messages=100)),
        (event(1, "assistant/message", messageId="m2"), view(messages=200)),
    ]
    assert [row.context_window for row in context_rows(steps, requests)] == [1_000_000, 1_000_000]


def test_request_refs_follow_the_importers_keys() -> None:
    assert request_ref(event(3, "cache/request", requestRef="req_1")) == "req_1"
    assert request_ref(event(4, "assistant/message", requestId="req_2", messageId="msg")) == "req_2"
    assert request_ref(event(5, "assistant/message")) == "seq-5"
    assert request_ref(event(6, "user/message")) is None


def test_a_row_without_provider_figures_leaves_them_out_of_its_json() -> None:
    row = ContextRow(0, "user/message", 1, 2, 3, None, None, None, "log")
    assert row.to_json() == {
        "seq": 0,
        "type": "user/message",
        "systemTokens": 1,
        "toolsTokens": 2,
        "messageTokens": 3,
        "basis": "log",
    }
