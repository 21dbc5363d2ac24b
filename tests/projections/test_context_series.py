from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from projections.context_series import ContextRow, RequestFigures, answered_keys, answering_seq, context_rows
from projections.normalized import EventRecord
from projections.request_breakdown import RequestBreakdown

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def event(seq: int, kind: str, **data: Any) -> EventRecord:
    return EventRecord(seq=seq, type=kind, time=T0, data=data)


def view(system: int = 0, messages: int = 0, **extra: int) -> dict[str, int]:
    return {"systemTokens": system, "messageTokens": messages, **extra}


def test_a_capture_row_takes_system_tools_and_messages_from_its_request_body() -> None:
    requests = {
        0: RequestFigures("claude-sonnet-4-20250514", "main", RequestBreakdown(3537, 9811, 1335), 15_036),
        1: RequestFigures("claude-3-5-haiku-20241022", "side", RequestBreakdown(0, 0, 10), 8),
    }
    steps = [
        (event(0, "cache/request", requestRef="req_a"), view()),
        (event(1, "cache/request", requestRef="req_b"), view()),
    ]
    main, side = context_rows(steps, requests)
    # Calibrated to the provider's count, the difference spread in proportion; the raw estimate kept.
    assert (main.system_tokens, main.tools_tokens, main.message_tokens) == (3622, 10047, 1367)
    assert main.total == main.provider_prompt_tokens == 15_036
    assert (main.raw, main.calibration) == (RequestBreakdown(3537, 9811, 1335), "provider count")
    assert (main.context_window, main.basis) == (200_000, "request body")
    assert (side.system_tokens, side.tools_tokens, side.message_tokens, side.lineage) == (0, 0, 8, "side")
    assert main.to_json()["rawEstimate"] == {"systemTokens": 3537, "toolsTokens": 9811, "messageTokens": 1335}
    assert main.to_json()["calibration"] == "provider count"


def test_a_side_call_does_not_replace_the_main_chain_s_figures_on_later_rows() -> None:
    requests = {
        0: RequestFigures("claude-sonnet-4-20250514", "main", RequestBreakdown(10, 20, 30), 60),
        1: RequestFigures("claude-3-5-haiku-20241022", "side", RequestBreakdown(0, 0, 5), 5),
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
    requests = {1: RequestFigures("claude-opus-4-6", "main", None, 20_000)}
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
    requests = {1: RequestFigures("deepseek-chat", "main", None, 9_000)}
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
    requests = {1: RequestFigures("deepseek-chat", "main", None, 9_000)}
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
        0: RequestFigures("claude-sonnet-4-5-20250929", "main", None, 50_000),
        1: RequestFigures("claude-sonnet-4-5-20250929", "main", None, 240_000),
    }
    steps = [
        (event(0, "assistant/message", messageId="m1"), view(messages=100)),
        (event(1, "assistant/message", messageId="m2"), view(messages=200)),
    ]
    assert [row.context_window for row in context_rows(steps, requests)] == [1_000_000, 1_000_000]


def test_a_request_answers_the_event_yielded_just_before_it() -> None:
    assert answering_seq(event(7, "cache/request")) == 7
    assert answering_seq(None) is None


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


def test_rows_before_the_first_call_take_the_basis_that_call_decides() -> None:
    requests = {2: RequestFigures("claude-sonnet-4-20250514", "main", None, 12_000)}
    steps = [
        (event(0, "user/message"), view(messages=100)),
        (event(1, "user/message"), view(messages=200)),
        (event(2, "assistant/message"), view(messages=300)),
    ]
    rows = list(context_rows(steps, requests))
    assert [row.basis for row in rows] == ["usage", "usage", "usage"]
    assert [row.system_tokens for row in rows] == [None, None, None]
    assert [row.inferred_tokens for row in rows] == [None, None, 12_000 - 200]


def test_a_log_without_calls_is_read_as_the_log() -> None:
    rows = list(context_rows([(event(0, "user/message"), view(messages=100))], {}))
    assert [(row.basis, row.system_tokens, row.tools_tokens) for row in rows] == [("log", 0, 0)]


def test_a_fold_that_stops_still_gives_the_rows_before_it() -> None:
    def steps() -> Iterator[tuple[EventRecord, dict[str, int]]]:
        yield event(0, "user/message"), view(messages=100)
        raise ValueError("the fold stopped at seq 1")

    rows: list[ContextRow] = []
    with pytest.raises(ValueError, match="seq 1"):
        rows.extend(context_rows(steps(), {}))
    assert [row.seq for row in rows] == [0]


def test_an_answering_event_stands_for_the_keys_the_importers_give_their_calls() -> None:
    assert answered_keys(3, "cache/request", {"requestRef": "req_1"}) == ("req_1",)
    assert answered_keys(4, "assistant/message", {"requestId": "req_2", "messageId": "msg"}) == (
        "req_2",
        "seq-4",
    )
    assert answered_keys(5, "assistant/message", {"requestId": "", "messageId": "msg_5"}) == (
        "msg_5",
        "seq-5",
    )
    assert answered_keys(6, "compaction/summary", {}) == ("seq-6",)
    assert answered_keys(7, "user/message", {"requestId": "x"}) == ()


def test_a_claude_code_session_gets_the_window_claude_code_runs_its_model_with() -> None:
    requests = {0: RequestFigures("claude-opus-4-6", "main", None, 30_000)}
    steps = [(event(0, "assistant/message"), view(messages=100))]
    (row,) = context_rows(steps, requests, host="claude-code")
    assert row.context_window == 200_000
    (api,) = context_rows(steps, requests)
    assert api.context_window == 1_000_000
