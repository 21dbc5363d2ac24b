"""The importers over the real logs in ``../shared/data`` (skipped when the folder is absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projections.formats import read_sessions
from projections.formats.anthropic.claude_code import read_claude_code
from projections.prices import event_price
from tests.projections.formats.conftest import SHARED_DATA, drain

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared/data is not beside the checkout"),
]


def _expected_calls(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """Per call (message.id + requestId): input and cache from any line, output from its largest line."""
    calls: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    with path.open() as fh:
        for text in fh:
            line = json.loads(text)
            message = line.get("message")
            if line.get("type") != "assistant" or message.get("model") == "<synthetic>":
                continue
            if line.get("isSidechain") and not path.name.startswith("agent-"):
                continue
            usage = message["usage"]
            key = (message["id"], line.get("requestId", ""))
            output = max(usage["output_tokens"], calls.get(key, (0, 0, 0, 0))[3])
            calls[key] = (
                usage["input_tokens"],
                usage.get("cache_read_input_tokens", 0),
                usage.get("cache_creation_input_tokens", 0),
                output,
            )
    return {request_id or message_id: value for (message_id, request_id), value in calls.items()}


def test_every_shared_file_reads_with_zero_line_errors() -> None:
    sessions = 0
    for session in read_sessions(SHARED_DATA):
        _, _, errors = drain(session)
        assert errors == [], session.path
        assert (session.fatal, session.crash_tail) == ("", ""), session.path
        sessions += 1
    assert sessions >= 8


@pytest.mark.parametrize("path", sorted(SHARED_DATA.glob("claude-code/**/*.jsonl")), ids=lambda p: p.name)
def test_claude_code_per_call_totals_match_one_call_per_message_and_request_id(path: Path) -> None:
    main = next(read_claude_code(path))
    _, requests, _ = drain(main)
    found = {}
    for request in requests:
        usage = request.usage
        assert usage is not None
        found[request.key] = (usage.uncached_input, usage.cache_read, usage.cache_write, usage.output)
    assert found == _expected_calls(path)


def test_the_compacted_session_meters_its_checkpoint_in_the_meter_s_units_and_keeps_pre_tokens() -> None:
    path = SHARED_DATA / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    events, requests, _ = drain(next(read_claude_code(path)))
    (summary,) = [e for e in events if e.type == "compaction/summary"]
    shadowed = set(summary.data["shadowedSeqs"])
    assert summary.data["shadowedTokenCount"] == sum(event_price(e) for e in events if e.seq in shadowed)
    assert summary.data["preTokens"] == 170251
    assert len(requests) == 139


def test_claude_trace_sample_reads_ten_calls_with_usage() -> None:
    (session,) = list(read_sessions(SHARED_DATA / "claude-trace" / "log-sample.jsonl"))
    _, requests, _ = drain(session)
    assert len(requests) == 10
    assert all(r.usage is not None and r.body is not None for r in requests)
    assert {r.lineage for r in requests if "haiku" in r.model} == {"side"}
    assert {r.lineage for r in requests if "sonnet" in r.model} == {"main"}


@pytest.mark.parametrize(
    ("name", "release"),
    [
        ("claude-trace/log-sample.jsonl", "claude-code 1.0.6"),
        ("claude-code/tool_heavy.jsonl", "claude-code 2.1.38"),
        ("claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "claude-code 1.0.108"),
    ],
)
def test_real_logs_name_the_claude_code_release_of_every_call(name: str, release: str) -> None:
    # claude-trace states it in the User-Agent header, a transcript on every line: one name for both.
    requests = [r for session in read_sessions(SHARED_DATA / name) for r in drain(session)[1]]
    assert requests
    assert {r.client_version for r in requests} == {release}
    # These logs predate the providers' cache diagnostics: no response states a reason.
    assert {r.provider_diagnosis for r in requests} == {None}
