from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dashboard.demo import DemoManifest, ExpectedSession, write_demo_dataset
from tests.dashboard.demo.conftest import read_lines

Totals = tuple[int, int, int, int]


def digest(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_same_seed_writes_byte_identical_files(tmp_path: Path, demo: tuple[Path, DemoManifest]) -> None:
    root, _ = demo
    write_demo_dataset(tmp_path, seed=7)
    assert digest(tmp_path) == digest(root)


def test_a_different_seed_writes_different_files(tmp_path: Path, demo: tuple[Path, DemoManifest]) -> None:
    write_demo_dataset(tmp_path, seed=8)
    assert digest(tmp_path) != digest(demo[0])


def test_it_is_fast_and_small(tmp_path: Path) -> None:
    started = time.perf_counter()
    write_demo_dataset(tmp_path)
    assert time.perf_counter() - started < 3.0
    assert sum(path.stat().st_size for path in tmp_path.rglob("*") if path.is_file()) < 5_000_000


def test_it_covers_thirty_sessions_three_sources_and_every_format(demo: tuple[Path, DemoManifest]) -> None:
    _, manifest = demo
    assert len(manifest.sessions) >= 30
    assert {entry.source for entry in manifest.files} == {"build-farm", "laptop-ana", "research-cluster"}
    formats = {entry.format for entry in manifest.files}
    assert formats == {
        "dsh",
        "claude-code",
        "claude-trace",
        "anthropic-capture",
        "connectome",
        "openai-capture",
    }
    versions = {s.format_version for entry in manifest.files_of("dsh") for s in entry.sessions}
    assert versions == {"0", "3", "4"}


def test_the_manifest_file_holds_the_returned_manifest(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    assert json.loads((root / "manifest.json").read_text()) == manifest.to_json()


def test_every_listed_file_exists_under_its_source(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for entry in manifest.files:
        assert (root / entry.path).is_file(), entry.path
        assert entry.path.startswith(entry.source + "/")


def dsh_counts(lines: list[dict[str, Any]]) -> tuple[int, int, Totals]:
    events = requests = 0
    totals = [0, 0, 0, 0]
    for line in lines[1:]:
        events += len(line["data"]["dt"]) + 1 if "seq0" in line else 1
        usage = line["data"].get("usage") if line["type"] == "assistant/message" else None
        if usage is not None:
            requests += 1
            keys = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")
            totals = [t + usage[k] for t, k in zip(totals, keys, strict=True)]
    return events, requests, (totals[0], totals[1], totals[2], totals[3])


def anthropic_totals(usages: list[dict[str, Any]]) -> Totals:
    return (
        sum(u["input_tokens"] for u in usages),
        sum(u["cache_read_input_tokens"] for u in usages),
        sum(u["cache_creation_input_tokens"] for u in usages),
        sum(u["output_tokens"] for u in usages),
    )


def expected_totals(session: ExpectedSession) -> tuple[int | None, ...]:
    usage = session.usage
    return (usage.uncached_input, usage.cache_read, usage.cache_write, usage.output)


def test_dsh_files_hold_the_manifest_counts(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for entry in manifest.files_of("dsh"):
        (expected,) = entry.sessions
        lines = read_lines(root / entry.path)
        assert lines[0]["id"] == expected.external_id
        assert dsh_counts(lines) == (expected.events, expected.requests, expected_totals(expected)), (
            entry.path
        )


def claude_code_calls(lines: list[dict[str, Any]]) -> dict[bool, list[dict[str, Any]]]:
    """Usage per call, one call per message.id + requestId, keeping the largest output_tokens."""
    calls: dict[tuple[str, str], tuple[bool, dict[str, Any]]] = {}
    for line in lines:
        message = line.get("message")
        if line.get("type") != "assistant" or message["model"] == "<synthetic>":
            continue
        key = (message["id"], line["requestId"])
        kept = calls.get(key)
        if kept is None or message["usage"]["output_tokens"] > kept[1]["output_tokens"]:
            calls[key] = (bool(line["isSidechain"]), message["usage"])
    split: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for sidechain, usage in calls.values():
        split[sidechain].append(usage)
    return split


def test_claude_code_files_hold_the_manifest_counts(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for entry in manifest.files_of("claude-code"):
        calls = claude_code_calls(read_lines(root / entry.path))
        main, *inline = entry.sessions
        if main.lineage == "subagent":
            assert anthropic_totals(calls[True]) == expected_totals(main), entry.path
            continue
        assert anthropic_totals(calls[False]) == expected_totals(main), entry.path
        assert len(calls[False]) == main.requests
        assert anthropic_totals(calls[True]) == (expected_totals(inline[0]) if inline else (0, 0, 0, 0)), (
            entry.path
        )


def sse_usage(raw: str) -> dict[str, Any]:
    usage: dict[str, Any] = {}
    for line in raw.splitlines():
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if event["type"] == "message_start":
                usage = dict(event["message"]["usage"])
            elif event["type"] == "message_delta":
                usage["output_tokens"] = event["usage"]["output_tokens"]
    return usage


def test_pairs_files_hold_the_manifest_counts(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for fmt, usage_of in (
        (
            "claude-trace",
            lambda r: (
                r["response"]["body"]["usage"]
                if r["response"]["body"]
                else sse_usage(r["response"]["body_raw"])
            ),
        ),
        ("anthropic-capture", lambda r: r["response"]["usage"]),
        ("connectome", lambda r: r["rawResponse"]["usage"]),
    ):
        for entry in manifest.files_of(fmt):
            (expected,) = entry.sessions
            records = read_lines(root / entry.path)
            assert len(records) == expected.requests
            assert anthropic_totals([usage_of(r) for r in records]) == expected_totals(expected), entry.path


def test_openai_captures_hold_the_manifest_counts(demo: tuple[Path, DemoManifest]) -> None:
    root, manifest = demo
    for entry in manifest.files_of("openai-capture"):
        (expected,) = entry.sessions
        cached = prompt = output = 0
        for record in read_lines(root / entry.path):
            response = record["response"].get("body", record["response"])
            usage = response["usage"]
            details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
            prompt += usage.get("prompt_tokens", usage.get("input_tokens"))
            output += usage.get("completion_tokens", usage.get("output_tokens"))
            cached += details["cached_tokens"]
        assert (prompt - cached, cached, None, output) == expected_totals(expected)
        assert cached > 0


def test_the_importers_read_every_file_without_line_errors(demo: tuple[Path, DemoManifest]) -> None:
    formats = pytest.importorskip("projections.formats", reason="projections.formats is not importable yet")
    if not hasattr(formats, "read_sessions"):
        pytest.skip("projections.formats.read_sessions does not exist yet")
    from projections.normalized import EventRecord, LineError, RequestRecord

    root, manifest = demo
    for entry in manifest.files:
        expected = {session.external_id: session for session in entry.sessions}
        seen = []
        for imported in formats.read_sessions(root / entry.path):
            items = list(imported.items)
            errors = [str(item) for item in items if isinstance(item, LineError)]
            assert errors == [], entry.path
            assert (imported.fatal, imported.unfoldable) == ("", ""), entry.path
            session = expected[imported.external_id]
            seen.append(imported.external_id)
            requests = [item for item in items if isinstance(item, RequestRecord)]
            if entry.format == "dsh":
                assert sum(isinstance(item, EventRecord) for item in items) == session.events
                assert len(requests) == session.requests, entry.path
            else:
                lineages = dict(Counter(r.lineage for r in requests))
                assert lineages == dict(session.requests_by_lineage), entry.path
            reported = [r.usage for r in requests if r.usage is not None]
            assert sum(u.cache_read or 0 for u in reported) == session.usage.cache_read, entry.path
            assert sum(u.uncached_input or 0 for u in reported) == session.usage.uncached_input, entry.path
        assert sorted(seen) == sorted(expected), entry.path
