from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from dashboard.demo import DemoManifest
from tests.dashboard.demo.conftest import read_lines


def transcripts(demo: tuple[Path, DemoManifest]) -> list[tuple[Any, list[dict[str, Any]]]]:
    root, manifest = demo
    return [(entry, read_lines(root / entry.path)) for entry in manifest.files_of("claude-code")]


def test_a_call_spans_several_lines_with_a_partial_output_count_first(
    demo: tuple[Path, DemoManifest],
) -> None:
    spans = 0
    for _, lines in transcripts(demo):
        calls: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for line in lines:
            if line.get("type") == "assistant" and "requestId" in line:
                calls[(line["message"]["id"], line["requestId"])].append(line["message"]["usage"])
        for usages in calls.values():
            if len(usages) > 1:
                spans += 1
                assert usages[0]["output_tokens"] < usages[-1]["output_tokens"]
                same = {
                    (u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"])
                    for u in usages
                }
                assert len(same) == 1
    assert spans >= 10


def test_a_compaction_writes_a_boundary_with_pre_tokens_then_a_summary(
    demo: tuple[Path, DemoManifest],
) -> None:
    found = 0
    for _, lines in transcripts(demo):
        for index, line in enumerate(lines):
            if line.get("subtype") == "compact_boundary":
                assert line["parentUuid"] is None
                assert line["compactMetadata"]["preTokens"] > 0
                summary = lines[index + 1]
                assert summary["isCompactSummary"] is True
                assert summary["parentUuid"] == line["uuid"]
                found += 1
    assert found == 1


def test_subagents_live_in_their_own_files_or_inline_as_sidechains(demo: tuple[Path, DemoManifest]) -> None:
    files = inline = 0
    for entry, lines in transcripts(demo):
        if "/subagents/agent-" in entry.path:
            agent = entry.path.rsplit("agent-", 1)[1].removesuffix(".jsonl")
            assert all(
                line["isSidechain"] is True and line["agentId"] == agent for line in lines if "uuid" in line
            )
            files += 1
        elif any(line.get("isSidechain") for line in lines):
            assert len(entry.sessions) == 2
            inline += 1
    assert (files, inline) == (2, 1)


def test_transcripts_carry_the_clients_other_record_kinds(demo: tuple[Path, DemoManifest]) -> None:
    kinds = set()
    for _, lines in transcripts(demo):
        for line in lines:
            kinds.add((line["type"], line.get("subtype")))
            if line["type"] == "assistant" and line["message"]["model"] == "<synthetic>":
                kinds.add(("synthetic", None))
                assert "requestId" not in line
    assert {
        ("progress", None),
        ("file-history-snapshot", None),
        ("system", "turn_duration"),
        ("synthetic", None),
    } <= kinds
