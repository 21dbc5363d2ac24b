from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

from dashboard.demo import DemoManifest
from dashboard.demo.cache_model import ANTHROPIC_MINIMUM, FRAMING_TOKENS, TTL_5M
from dashboard.demo.conversation import IMAGE_PLACEHOLDER, cache_layout
from tests.dashboard.demo.conftest import read_lines


def trace_records(demo: tuple[Path, DemoManifest], scenario: str) -> list[dict[str, Any]]:
    root, manifest = demo
    (entry,) = [e for e in manifest.files_of("claude-trace") if scenario in e.sessions[0].scenarios]
    return read_lines(root / entry.path)


def main_bodies(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["request"]["body"] for r in records if r["request"]["body"].get("tools")]


def usage(record: dict[str, Any]) -> dict[str, Any]:
    body = record["response"]["body"]
    if body is not None:
        return dict(body["usage"])
    for line in record["response"]["body_raw"].splitlines():
        if line.startswith("data: ") and '"message_start"' in line:
            return dict(json.loads(line[6:])["message"]["usage"])
    raise AssertionError("no usage in the response")


def blocks(body: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        for b, block in enumerate(
            content if isinstance(content, list) else [{"type": "text", "text": content}]
        ):
            out.append((m, b, block))
    return out


def test_an_image_is_stripped_in_place_between_two_consecutive_requests(
    demo: tuple[Path, DemoManifest],
) -> None:
    bodies = main_bodies(trace_records(demo, "image-stripped"))
    hits = []
    for before, after in itertools.pairwise(bodies):
        for m, b, block in blocks(before):
            if block["type"] == "image":
                replaced = after["messages"][m]["content"][b]
                if replaced["type"] == "text" and replaced["text"] == IMAGE_PLACEHOLDER:
                    hits.append((m, b))
    assert len(hits) == 1


def test_a_tool_result_is_replaced_under_the_same_tool_use_id(demo: tuple[Path, DemoManifest]) -> None:
    bodies = main_bodies(trace_records(demo, "tool-result-replaced"))
    contents: dict[str, set[str]] = {}
    for body in bodies:
        for _, _, block in blocks(body):
            if block["type"] == "tool_result":
                contents.setdefault(block["tool_use_id"], set()).add(block["content"])
    assert sum(len(texts) > 1 for texts in contents.values()) == 1


def test_the_system_prompt_changes_on_every_request_by_a_timestamp_line(
    demo: tuple[Path, DemoManifest],
) -> None:
    bodies = main_bodies(trace_records(demo, "system-timestamp"))
    systems = [body["system"][-1]["text"] for body in bodies]
    assert len(set(systems)) == len(systems) > 3
    assert {re.sub(r"Current time: \S+", "", text) for text in systems} == {
        re.sub(r"Current time: \S+", "", systems[0])
    }


def test_the_tool_list_and_the_model_change_mid_session(demo: tuple[Path, DemoManifest]) -> None:
    bodies = main_bodies(trace_records(demo, "tools-changed"))
    tool_lists = [tuple(tool["name"] for tool in body["tools"]) for body in bodies]
    models = [body["model"] for body in bodies]
    assert len(set(tool_lists)) == 2
    assert "WebFetch" in tool_lists[-1]
    assert models[0] != models[-1]


def test_a_pause_past_the_ttl_turns_the_next_read_into_a_write(demo: tuple[Path, DemoManifest]) -> None:
    records = [r for r in trace_records(demo, "ttl-expired") if r["request"]["body"].get("tools")]
    gaps = [
        (after, after["request"]["timestamp"] - before["response"]["timestamp"])
        for before, after in itertools.pairwise(records)
    ]
    expired = [after for after, gap in gaps if gap > TTL_5M]
    assert len(expired) == 1
    assert usage(expired[0])["cache_read_input_tokens"] == 0
    assert usage(expired[0])["cache_creation_input_tokens"] > 0


def test_a_message_in_the_middle_of_history_is_edited(demo: tuple[Path, DemoManifest]) -> None:
    bodies = main_bodies(trace_records(demo, "edited"))
    edits = []
    for before, after in itertools.pairwise(bodies):
        for (m, _b, old), (_, _, new) in zip(blocks(before), blocks(after), strict=False):
            if (
                old.get("text") is not None
                and old["type"] == new["type"] == "text"
                and old["text"] != new["text"]
            ):
                edits.append((m, len(before["messages"])))
    assert len(edits) == 1
    index, length = edits[0]
    assert 0 < index < length - 2


def test_haiku_side_calls_stay_below_the_cache_minimum(demo: tuple[Path, DemoManifest]) -> None:
    side = [r for r in trace_records(demo, "haiku-side-calls") if "haiku" in r["request"]["body"]["model"]]
    assert len(side) >= 2
    assert any(r["response"]["body"] is not None for r in side)
    for record in side:
        figures = usage(record)
        assert figures["cache_read_input_tokens"] == figures["cache_creation_input_tokens"] == 0
        assert figures["input_tokens"] < ANTHROPIC_MINIMUM[record["request"]["body"]["model"]]


def test_reported_prompt_totals_match_the_request_bytes(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for entry in manifest.files_of("claude-trace"):
        for record in read_lines(root / entry.path):
            prefix, _ = cache_layout(record["request"]["body"])
            figures = usage(record)
            total = (
                figures["input_tokens"]
                + figures["cache_read_input_tokens"]
                + figures["cache_creation_input_tokens"]
            )
            assert total == prefix[-1].tokens + FRAMING_TOKENS


def test_a_growing_conversation_reads_what_the_previous_request_wrote(
    demo: tuple[Path, DemoManifest],
) -> None:
    records = [r for r in trace_records(demo, "edited")]
    reads = [usage(r)["cache_read_input_tokens"] for r in records]
    writes = [usage(r)["cache_read_input_tokens"] + usage(r)["cache_creation_input_tokens"] for r in records]
    assert (
        sum(read == previous for read, previous in zip(reads[1:], writes, strict=False)) >= len(records) // 2
    )
