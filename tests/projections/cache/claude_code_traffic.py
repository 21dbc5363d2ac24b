"""Claude Code's traffic as capture records, for tests: its attribution block and a compaction.

Shapes as the public record shows them: the attribution block is ``system[0]``, its own text block
without a marker (anthropics/claude-code#68900, MadAppGang/claudish#167); the compaction's
summarising call of 1.0.x has its own system prompt and one tool and ends with the request for
"a detailed summary of the conversation so far"; the restart opens with "This session is being
continued from a previous conversation". Usage is given as each request's own uncalibrated
estimate splits it, so the tests' figures follow from the bodies they build.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import CC, T0, tools, words

MODEL = "claude-sonnet-4-5"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
THIRD_PARTY_URL = "https://api.fireworks.ai/inference/v1/messages"
IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
SUMMARIZER = "You are a helpful AI assistant tasked with summarizing conversations."
SUMMARY_REQUEST = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to "
    "the user's explicit requests and your previous actions."
)
CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. The summary "
    "below covers the earlier portion of the conversation.\n\n"
)


def billing(suffix: str, cch: str, version: str = "2.1.88") -> dict[str, Any]:
    """Claude Code's attribution block, as its first system block."""
    text = f"x-anthropic-billing-header: cc_version={version}.{suffix}; cc_entrypoint=cli; cch={cch};"
    return {"type": "text", "text": text}


def turns(tag: str, count: int) -> list[dict[str, Any]]:
    """``count`` messages alternating user / assistant, distinct per ``tag``."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": words(f"{tag} message {i}", 2_400)}],
        }
        for i in range(count)
    ]


def claude_code_body(
    messages: list[dict[str, Any]],
    *,
    attribution: dict[str, Any] | None,
    mark_tools: bool = True,
    system: list[dict[str, Any]] | None = None,
    tool_names: tuple[str, ...] = ("Bash", "Read", "Edit", "Write"),
) -> dict[str, Any]:
    """A Messages request shaped as Claude Code sends it: the tools (the last one marked), the
    attribution block, the identity line and the system prompt (both marked), the last message
    marked."""
    defined = tools(*tool_names)
    if mark_tools:
        defined[-1]["cache_control"] = dict(CC)
    if system is None:
        system = [
            {"type": "text", "text": IDENTITY, "cache_control": dict(CC)},
            {"type": "text", "text": words("claude code system prompt", 12_000), "cache_control": dict(CC)},
        ]
    blocks = ([attribution] if attribution is not None else []) + system
    sent = json.loads(json.dumps(messages))
    sent[-1]["content"][-1]["cache_control"] = dict(CC)
    return {"model": MODEL, "max_tokens": 8_192, "tools": defined, "system": blocks, "messages": sent}


def split(body: dict[str, Any], *, read: int | None = None, read_all: bool = False) -> dict[str, int]:
    """Usage in Anthropic's fields that adds up to the body's own estimate: ``read`` tokens read (or
    all but the three uncached tokens), the rest written."""
    total = render_request("anthropic", "messages", body).total_tokens
    uncached = 3
    got = total - uncached if read_all else (read or 0)
    return {
        "input_tokens": uncached,
        "cache_read_input_tokens": got,
        "cache_creation_input_tokens": total - uncached - got,
    }


def tools_tokens(body: dict[str, Any]) -> int:
    """The estimate of the body's tools: what a read that stops at the attribution block reads."""
    rendered = render_request("anthropic", "messages", body)
    return rendered.cum_tokens[rendered.tier_start("system")]


def capture(
    body: dict[str, Any],
    usage: dict[str, int],
    *,
    key: str,
    seconds: float,
    url: str = ANTHROPIC_URL,
    session: str | None = None,
    start: datetime = T0,
) -> dict[str, Any]:
    """One capture record of the call, sent ``seconds`` after ``start``."""
    record: dict[str, Any] = {
        "request": {"url": url, "headers": {"user-agent": "claude-cli/2.1.88 (external, cli)"}, "body": body},
        "response": {
            "status": 200,
            "headers": {"request-id": key},
            "body": {"id": f"msg_{key}", "type": "message", "model": MODEL, "usage": usage},
        },
        "started_at": (start + timedelta(seconds=seconds)).isoformat(),
    }
    if session is not None:
        record["session_id"] = session
    return record


def write_captures(path: Path, records: list[dict[str, Any]]) -> Path:
    """The records as a capture file."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def compaction_captures() -> list[dict[str, Any]]:
    """A conversation Claude Code 1.0.x compacts: three turns of the main thread, the summarising
    call (its own system prompt, one tool, the whole history and the summary request), and the
    restart on the summary. Each main-thread turn reads the previous one's prompt; the summarising
    call reads nothing, the restart reads the tools and system prompt."""
    history = turns("main", 9)
    records = []
    previous = 0
    for number, count in enumerate((5, 7, 9)):
        body = claude_code_body(history[:count], attribution=None)
        usage = split(body, read=previous)
        records.append(capture(body, usage, key=f"main{number}", seconds=20 * number))
        previous = usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    ask = {"role": "user", "content": [{"type": "text", "text": SUMMARY_REQUEST}]}
    summarizer = claude_code_body(
        [*history, ask],
        attribution=None,
        mark_tools=False,
        system=[{"type": "text", "text": SUMMARIZER}],
        tool_names=("Bash",),
    )
    records.append(capture(summarizer, split(summarizer, read=0), key="compact", seconds=70))
    summary = {"role": "user", "content": [{"type": "text", "text": CONTINUATION + words("summary", 3_000)}]}
    restart = claude_code_body([summary], attribution=None)
    static = render_request("anthropic", "messages", restart)
    head = static.cum_tokens[static.tier_start("messages")]
    records.append(capture(restart, split(restart, read=head), key="restart", seconds=90))
    return records
