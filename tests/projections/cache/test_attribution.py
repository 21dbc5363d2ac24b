"""Claude Code's attribution block named as the cause wherever the provider's reads show a miss behind
it, and not where they show the endpoint ignores it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from projections.cache.cross_session import PrefixIndex, session_writes
from projections.cache.explain.verdict import verdict
from projections.cache.render.attribution_block import REMEDY, attribution_text, fields_changed, parse_fields
from projections.cache.results import RequestResult
from projections.cache.session_analysis import analyse_records
from projections.formats import read_sessions
from projections.normalized import RequestRecord
from tests.projections.cache.claude_code_traffic import (
    THIRD_PARTY_URL,
    billing,
    capture,
    claude_code_body,
    split,
    tools_tokens,
    turns,
    write_captures,
)

HEADER = "x-anthropic-billing-header: cc_version=2.1.88.a3f; cc_entrypoint=cli; cch=36ee5;"


def records_of(path: Path) -> dict[str, list[RequestRecord]]:
    """Each session of a capture file with its request records, as the importer reads them."""
    out: dict[str, list[RequestRecord]] = {}
    for session in read_sessions(path):
        out[session.external_id] = [item for item in session.items if isinstance(item, RequestRecord)]
    return out


def analysed(path: Path) -> dict[str, list[RequestResult]]:
    """Each session analysed with what the others wrote, as ``explain`` and the store do."""
    sessions = records_of(path)
    alone = {name: analyse_records(records) for name, records in sessions.items()}
    written = PrefixIndex.of(
        write
        for name, records in sessions.items()
        for write in session_writes(name, records, alone[name].results)
    )
    return {
        name: analyse_records(records, foreign=written.for_reader(name)).results
        for name, records in sessions.items()
    }


def one_shot(tag: str, suffix: str, cch: str) -> dict[str, Any]:
    """The body of a ``claude --print`` session: one question."""
    return claude_code_body(turns(tag, 1), attribution=billing(suffix, cch))


def test_the_block_is_read_field_by_field_and_only_as_a_header_line() -> None:
    assert parse_fields(HEADER) == {"cc_version": "2.1.88.a3f", "cc_entrypoint": "cli", "cch": "36ee5"}
    assert attribution_text({"type": "text", "text": HEADER}) == HEADER
    assert attribution_text({"type": "text", "text": "You are Claude Code"}) is None
    later = "x-anthropic-billing-header: cc_version=2.1.222; cc_prev_req=req_011Cdk3;"
    assert fields_changed(HEADER, later) == (
        "cc_version 2.1.88.a3f → 2.1.222; cc_entrypoint cli → (none); cch 36ee5 → (none); "
        "cc_prev_req (none) → req_011Cdk3"
    )


def test_a_second_one_shot_session_reading_only_the_tools_names_the_block_with_the_remedy(
    tmp_path: Path,
) -> None:
    first = one_shot("capital of France", "a3f", "36ee5")
    second = one_shot("three prime numbers", "e91", "0aaa9")
    tools = tools_tokens(second)
    path = write_captures(
        tmp_path / "calls.jsonl",
        [
            capture(first, split(first, read=0), key="a0", seconds=0, session="session-a"),
            # The A/B test's shape: the next session reads the tools and writes the system prompt again.
            capture(second, split(second, read=tools), key="b0", seconds=8, session="session-b"),
        ],
    )

    result = analysed(path)["session-b"][0]
    said = verdict(result.data, has_body=True)

    attribution = result.data["attribution"]
    assert attribution["ignored"] is False
    assert attribution["writer"] == {"session": "session-a", "key": "a0", "ordinal": 0}
    assert attribution["read"] == tools
    # Without the block it would have read the prefix session A wrote through its system prompt.
    assert attribution["reprocessed"] == attribution["writer_tokens"] - tools > 2_000
    assert attribution["rewritten"] == attribution["reprocessed"]
    assert said.first_change is not None
    assert said.first_change.cause == "attribution-changed"
    assert said.label == f"prefix-changed@system:{attribution['position']}"
    assert said.material
    assert "cc_version 2.1.88.a3f → 2.1.88.e91; cch 36ee5 → 0aaa9" in said.detail
    assert said.remedy == REMEDY
    assert "CLAUDE_CODE_ATTRIBUTION_HEADER=0" in said.remedy


def test_a_third_party_endpoint_reading_nothing_names_the_block_with_the_remedy(tmp_path: Path) -> None:
    history = turns("fireworks", 5)
    first = claude_code_body(history[:3], attribution=billing("c8e", "36ee5"), mark_tools=False)
    second = claude_code_body(history, attribution=billing("c8e", "0aaa9"), mark_tools=False)
    path = write_captures(
        tmp_path / "calls.jsonl",
        [
            capture(first, split(first, read=0), key="r0", seconds=0, url=THIRD_PARTY_URL),
            capture(second, split(second, read=0), key="r1", seconds=30, url=THIRD_PARTY_URL),
        ],
    )

    (results,) = analysed(path).values()
    said = verdict(results[1].data, has_body=True)

    attribution = results[1].data["attribution"]
    assert attribution["endpoint"] == "api.fireworks.ai"
    assert attribution["ignored"] is False
    assert attribution["reprocessed"] == attribution["writer_tokens"]  # it read nothing at all
    assert said.first_change is not None
    assert said.first_change.cause == "attribution-changed"
    assert said.label is not None
    assert said.label.startswith("prefix-changed@system")
    assert said.material
    assert "at api.fireworks.ai read 0 tokens" in said.detail
    assert said.remedy == REMEDY


def read_back_calls(tmp_path: Path, topic: str, *, first_cch: str, second_cch: str) -> Path:
    """Two calls 30 s apart whose attribution blocks carry ``first_cch`` and ``second_cch``, the
    second reading all but 3 tokens of the prompt the first wrote."""
    history = turns(topic, 5)
    first = claude_code_body(history[:3], attribution=billing("a3f", first_cch))
    second = claude_code_body(history, attribution=billing("a3f", second_cch))
    held = sum(split(first, read=0).values())
    return write_captures(
        tmp_path / "calls.jsonl",
        [
            capture(first, split(first, read=0), key="r0", seconds=0),
            capture(second, split(second, read=held - 3), key="r1", seconds=30),
        ],
    )


def test_an_endpoint_that_reads_on_past_a_changed_block_is_said_to_ignore_it(tmp_path: Path) -> None:
    # The first-party API served the whole previous prompt though cch changed.
    path = read_back_calls(tmp_path, "first party", first_cch="36ee5", second_cch="0aaa9")

    (results,) = analysed(path).values()
    said = verdict(results[1].data, has_body=True)

    assert results[1].data["attribution"]["ignored"] is True
    assert results[1].data["attribution"]["reprocessed"] == 0
    assert said.label is None
    assert said.badge == "no miss"
    assert "this endpoint ignores what changed in it" in said.detail
    assert said.remedy == ""
    assert [w.kind for w in said.warnings] == []  # its read is no model error


def test_a_block_that_stays_the_same_in_a_session_is_no_finding(tmp_path: Path) -> None:
    path = read_back_calls(tmp_path, "stable", first_cch="00000", second_cch="00000")

    (results,) = analysed(path).values()

    assert results[1].data["attribution"] is None
    assert results[1].data["first_change"] is None
