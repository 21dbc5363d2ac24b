"""Lineages follow the conversation: the engine decides them from the request bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from projections.cache.predict.lineage import assign_lineages
from projections.cache.render.rendering import render_request
from projections.cache.session_analysis import analyse_records
from projections.formats.anthropic.claude_trace import read_claude_trace
from projections.normalized import RequestRecord
from tests.projections.cache.builders import (
    T0,
    body,
    conversation,
    record,
    tools,
    words,
)

HAIKU = "claude-3-5-haiku-20241022"


def side_call(system: str, question: str) -> dict[str, Any]:
    """A tool-less one-shot call, as a client sends for a title or a quota probe."""
    return {
        "model": HAIKU,
        "max_tokens": 64,
        "system": [{"type": "text", "text": system}] if system else [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": question}]}],
    }


def lineages(records: list[RequestRecord]) -> dict[str, tuple[str, str | None]]:
    rendered = {
        r.key: render_request(r.provider, r.api, r.body, usage=r.usage) for r in records if r.body is not None
    }
    return {key: (of.lineage, of.parent) for key, of in assign_lineages(records, rendered).items()}


def test_side_calls_of_different_purposes_are_separate_lineages_and_the_same_purpose_is_one() -> None:
    records = [
        record("title", 0, side_call("Write a title.", "the chat so far"), lineage="side"),
        record("quota1", 1, side_call("", "quota"), lineage="side", minutes=1),
        record("quota2", 2, side_call("", "quota"), lineage="side", minutes=2),
        record("title2", 3, side_call("Write a title.", "the chat, later"), lineage="side", minutes=3),
    ]

    found = lineages(records)

    assert found["title"] == ("side", None)
    assert found["quota1"] == ("side-2", None)  # not compared with the title call
    assert found["quota2"] == ("side-2", "quota1")
    # Another title: its message differs, its system prompt is the title's: a new thread of that lineage.
    assert found["title2"] == ("side", "title")


def test_a_subagent_with_its_own_system_and_tools_is_not_compared_with_the_main_chain() -> None:
    history = conversation(6)
    task = body(
        conversation(2, chars=700),  # its own task prompt
        marks=(1,),
        system=[{"type": "text", "text": words("you are a search agent", 6_000)}],
        tool_defs=tools("Grep"),
    )
    records = [
        record("m0", 0, body(history[:2], marks=(1,))),
        record("m1", 1, body(history[:4], marks=(3,)), minutes=1),
        record("s0", 2, task, minutes=1.5),
        record("m2", 3, body(history, marks=(5,)), minutes=2),
    ]

    found = lineages(records)

    assert found == {
        "m0": ("main", None),
        "m1": ("main", "m0"),
        "s0": ("subagent", None),
        "m2": ("main", "m1"),
    }


def test_an_edit_deep_in_the_history_keeps_the_request_in_its_chain() -> None:
    history = conversation(12)
    edited = copy.deepcopy(history)
    edited[6]["content"][0]["text"] = "a tool result cleared"
    records = [
        record("r0", 0, body(history, marks=(11,))),
        record("r1", 1, body(edited, marks=(11,)), minutes=1),
    ]

    assert lineages(records)["r1"] == ("main", "r0")


def test_a_request_is_compared_with_the_turn_it_extends_not_a_compaction_call_forked_from_it() -> None:
    history = conversation(8)
    summarize = {"role": "user", "content": [{"type": "text", "text": "Summarize the conversation."}]}
    records = [
        record("a", 0, body(history, marks=(7,))),
        record("compact", 1, body([*history, summarize], marks=(8,)), minutes=1),
        record("c", 2, body([*history, *conversation(2)], marks=(9,)), minutes=2),
        record("after", 3, body(conversation(2, chars=900), marks=(1,)), minutes=3),
    ]

    found = lineages(records)

    assert found["compact"] == ("main", "a")
    assert found["c"] == ("main", "a")
    # After a compaction the messages start over under the same tools and system prompt.
    assert found["after"] == ("main", "c")


def test_a_tool_less_session_still_has_a_main_lineage() -> None:
    records = [record("q0", 0, side_call("Answer briefly.", "hello"))]

    assert lineages(records) == {"q0": ("main", None)}


def trace_line(at: float, request_body: dict[str, Any], read: int, write: int, key: str) -> str:
    usage = {"input_tokens": 12, "output_tokens": 5, "cache_read_input_tokens": read}
    usage["cache_creation_input_tokens"] = write
    return json.dumps(
        {
            "request": {
                "timestamp": at,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {},
                "body": request_body,
            },
            "response": {
                "timestamp": at + 2,
                "status_code": 200,
                "headers": {"request-id": key},
                "body": {
                    "id": key,
                    "type": "message",
                    "model": request_body["model"],
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": usage,
                },
            },
            "logged_at": "2025-06-01T12:00:00Z",
        }
    )


def test_a_claude_trace_capture_gets_a_side_lineage_a_main_chain_and_a_subagent(tmp_path: Path) -> None:
    start = T0.timestamp()
    history = conversation(6)
    agent = body(
        conversation(2, chars=700),  # its own task prompt
        marks=(1,),
        system=[{"type": "text", "text": words("you are a search agent", 6_000)}],
        tool_defs=tools("Grep"),
    )
    lines = [
        trace_line(start, side_call("", "quota"), 0, 0, "req_quota"),
        trace_line(start + 1, body(history[:2], marks=(1,)), 0, 3_000, "req_m0"),
        trace_line(start + 20, body(history[:4], marks=(3,)), 3_000, 400, "req_m1"),
        trace_line(start + 30, agent, 0, 2_000, "req_agent"),
        trace_line(start + 40, body(history, marks=(5,)), 3_400, 400, "req_m2"),
    ]
    path = tmp_path / "log-2025-06-01-12-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (session,) = read_claude_trace(path)
    records = [item for item in session.items if isinstance(item, RequestRecord)]

    results = {r.key: r.data for r in analyse_records(records).results}

    assert {key: data["lineage"] for key, data in results.items()} == {
        "req_quota": "side",
        "req_m0": "main",
        "req_m1": "main",
        "req_agent": "subagent",
        "req_m2": "main",
    }
    assert results["req_agent"]["previous"] is None  # a subagent is not diffed against the main chain
    assert results["req_m2"]["previous"] == {"ordinal": 2, "key": "req_m1"}
    assert results["req_m2"]["first_change"] is None
