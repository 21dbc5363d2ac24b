from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashboard.demo import DemoManifest
from projections.normalized import EventRecord
from projections.prices import event_price
from tests.dashboard.demo.conftest import read_lines


def replay(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Fold the surface of a dsh log, checking the shadow-price protocol; returns nodes and findings."""
    surface: list[dict[str, Any]] = []
    findings: list[str] = []
    claim: dict[str, Any] | None = None
    for line in lines[1:]:
        if "seq0" in line:
            claim = None
            continue
        op = line.get("surfaceOp")
        if op == "append":
            surface.append(line)
        elif isinstance(op, dict):
            seqs = [node["seq"] for node in surface]
            start, end = (
                (op["start"], op["end"])
                if "start" in op
                else (seqs.index(op["startSeq"]), seqs.index(op["endSeq"]))
            )
            shadowed = surface[start : end + 1]
            assert line["sourceEventSeqs"] == [node["seq"] for node in shadowed]
            if claim is not None:
                assert (claim["shadowedRange"]["start"], claim["shadowedRange"]["end"]) == (start, end)
                assert claim["shadowedSeqs"] == line["sourceEventSeqs"]
                price = sum(event_price(record(node)) for node in shadowed)
                assert claim["shadowedTokenCount"] == price, line["seq"]
                findings.append("metered")
            elif line["type"] == "system/message":
                assert len(shadowed) == 1
                assert shadowed[0]["type"] == "system/message"
                findings.append("rewrite")
            else:
                # The one unmetered kind the demo writes: a tool result cut in place.
                assert line["type"] == "tool/result"
                assert [node["type"] for node in shadowed] == ["tool/result"]
                findings.append("unmetered")
            surface[start : end + 1] = [line]
        claim = line["data"] if line["type"] in ("compaction/summary", "compaction/prune") else None
    return surface, findings


def record(line: dict[str, Any]) -> EventRecord:
    return EventRecord(
        seq=line["seq"], type=line["type"], time=None, data=line["data"], surface_op=line.get("surfaceOp")
    )


def dsh_logs(demo: tuple[Path, DemoManifest]) -> list[tuple[Path, Any, list[dict[str, Any]]]]:
    root, manifest = demo
    return [(root / e.path, e.sessions[0], read_lines(root / e.path)) for e in manifest.files_of("dsh")]


def test_seqs_are_contiguous_from_zero_after_packed_rows_expand(demo: tuple[Path, DemoManifest]) -> None:
    for path, _, lines in dsh_logs(demo):
        seqs: list[int] = []
        for line in lines[1:]:
            seqs += (
                [line["seq0"] + i for i in range(len(line["data"]["dt"]) + 1)]
                if "seq0" in line
                else [line["seq"]]
            )
        assert seqs == list(range(len(seqs))), path


def test_every_replacement_is_metered_exactly_a_system_prompt_rewrite_or_a_declared_truncation(
    demo: tuple[Path, DemoManifest],
) -> None:
    for path, expected, lines in dsh_logs(demo):
        surface, findings = replay(lines)
        assert findings.count("metered") == expected.surface["meteredReplacements"], path
        assert findings.count("rewrite") == expected.surface["systemRewrites"], path
        assert findings.count("unmetered") == expected.surface["unmeteredReplacements"], path
        assert len(surface) == expected.surface["nodes"], path


def test_compactions_follow_the_four_event_protocol(demo: tuple[Path, DemoManifest]) -> None:
    compactions = 0
    for _, _, lines in dsh_logs(demo):
        types = [line["type"] for line in lines]
        for i, kind in enumerate(types):
            if kind == "compaction/start":
                assert types[i + 1 : i + 4] == ["compaction/summary", "user/message", "compaction/end"]
                checkpoint = lines[i + 2]
                assert checkpoint["data"]["source"] == {"kind": "plugin", "plugin": "compact"}
                compactions += 1
            if kind == "compaction/prune":
                assert types[i + 1] == "tool/result"
                assert lines[i + 1]["surfaceOp"]["op"] == "replace"
    assert compactions >= 6


def test_versions_spell_replacements_and_system_prompts_their_own_way(
    demo: tuple[Path, DemoManifest],
) -> None:
    spellings: dict[int, set[str]] = {}
    for _, _, lines in dsh_logs(demo):
        version = lines[0]["version"]
        types = {line["type"] for line in lines}
        assert ("system/message" in types) == (version >= 3)
        headers = [line for line in lines if line["type"] == "request/header"]
        assert ("system" in headers[0]["data"]["header"]) == (version == 0)
        for line in lines:
            if isinstance(line.get("surfaceOp"), dict):
                spellings.setdefault(version, set()).add(
                    "startSeq" if "startSeq" in line["surfaceOp"] else "start"
                )
    assert spellings[3] == {"start"}
    assert spellings[4] == {"startSeq"}


def test_usage_rides_on_assistant_messages_and_cache_records_are_ignorable(
    demo: tuple[Path, DemoManifest],
) -> None:
    kinds: set[str] = set()
    for _, _, lines in dsh_logs(demo):
        for line in lines[1:]:
            if line["type"] == "assistant/message":
                assert set(line["data"]["usage"]) == {
                    "inputTokens",
                    "cacheReadTokens",
                    "cacheWriteTokens",
                    "outputTokens",
                }
            if line["type"].startswith("cache/"):
                kinds.add(line["type"])
                assert line["ignorable"] is True
    assert kinds == {"cache/render-record", "cache/credit", "cache/log"}


def test_a_subagent_session_names_its_parent(demo: tuple[Path, DemoManifest]) -> None:
    logs = dsh_logs(demo)
    ids = {lines[0]["id"] for _, _, lines in logs}
    parents = [lines[0]["parentSession"] for _, _, lines in logs if "parentSession" in lines[0]]
    assert parents
    assert set(parents) <= ids


def test_projection_caches_agree_with_the_replayed_surface(demo: tuple[Path, DemoManifest]) -> None:
    checked = 0
    for path, expected, lines in dsh_logs(demo):
        cache_path = path.parent / "session_projcache.json"
        if not cache_path.exists():
            continue
        cache = json.loads(cache_path.read_text())
        surface, _ = replay(lines)
        prices = [(node["type"], event_price(record(node))) for node in surface]
        system = next(
            (price for kind, price in reversed(prices) if kind == "system/message" and price > 0), 0
        )
        row = cache["rows"]["contextBreakdown"]
        assert row["val"] == {"systemTokens": system, "messageTokens": sum(p for _, p in prices) - system}
        assert row["seq"] == expected.events - 1
        checked += 1
    assert checked >= 3
