"""The client release of a request, from each source that states it."""

from __future__ import annotations

import json
from pathlib import Path

from projections.client_version import client_version, user_agent_version, version_sort_key
from projections.formats.anthropic.claude_code import read_claude_code
from projections.formats.anthropic.claude_trace import parse_trace_record
from projections.formats.openai.codex import read_codex
from projections.formats.traffic.captures import parse_capture_record
from projections.normalized import RequestRecord


def test_a_claude_code_user_agent_names_claude_code_and_its_release() -> None:
    assert user_agent_version("claude-cli/1.0.6 (external, cli)") == "claude-code 1.0.6"
    assert user_agent_version("codex_cli_rs/0.46.0 (Mac OS 15.1; arm64)") == "codex 0.46.0"
    assert user_agent_version("my-proxy/2.3.1") == "my-proxy 2.3.1"


def test_a_user_agent_without_a_product_version_names_no_release() -> None:
    assert user_agent_version("") == ""
    assert user_agent_version("Mozilla") == ""
    assert client_version("codex", "  ") == ""


def test_a_claude_trace_request_takes_its_release_from_its_user_agent() -> None:
    exchange = parse_trace_record(
        {
            "request": {
                "timestamp": 1748554704.25,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages?beta=true",
                "headers": {"User-Agent": "claude-cli/1.0.6 (external, cli)"},
                "body": {"model": "claude-sonnet-4-20250514", "messages": []},
            },
            "response": {"status_code": 200, "body": {"id": "msg_1", "usage": {"input_tokens": 3}}},
            "logged_at": "2025-05-29T21:38:25Z",
        }
    )
    assert exchange is not None
    assert exchange.client_version == "claude-code 1.0.6"


def test_a_capture_without_request_headers_names_no_release() -> None:
    exchange = parse_capture_record(
        {"request": {"model": "claude-sonnet-4-20250514", "messages": []}, "response": {"id": "msg_1"}}
    )
    assert exchange is not None
    assert exchange.client_version == ""


def test_a_claude_code_transcript_takes_each_call_s_release_from_its_line(tmp_path: Path) -> None:
    lines = []
    for n, version in enumerate(["2.1.38", "2.1.39"]):
        lines.append(
            {
                "type": "assistant",
                "sessionId": "s1",
                "uuid": f"a{n}",
                "version": version,
                "timestamp": f"2026-01-05T09:00:0{n}Z",
                "requestId": f"req_{n}",
                "message": {
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            }
        )
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = list(read_claude_code(path))
    records = [item for item in session.items if isinstance(item, RequestRecord)]
    assert [r.client_version for r in records] == ["claude-code 2.1.38", "claude-code 2.1.39"]


def test_releases_sort_by_number_not_by_text() -> None:
    values = ["claude-code 1.0.10", "codex 0.5.0", "claude-code 1.0.9"]
    assert sorted(values, key=version_sort_key) == ["claude-code 1.0.9", "claude-code 1.0.10", "codex 0.5.0"]


def test_a_codex_rollout_names_its_cli_release_on_every_call() -> None:
    fixtures = Path(__file__).parent / "formats" / "fixtures" / "codex" / "sessions"
    (path,) = sorted(fixtures.glob("2025/10/14/*.jsonl"))
    (session,) = list(read_codex(path))
    records = [item for item in session.items if isinstance(item, RequestRecord)]
    assert records
    assert {r.client_version for r in records} == {"codex 0.46.0"}
