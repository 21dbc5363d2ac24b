"""Hand-built Claude sessions whose every figure follows from the provider's rules by hand.

Each request's prompt is a system prompt of 8,000 tokens and a history of 500 tokens for the first
user message plus 800 for every later turn (a 300-token reply and a 500-token user message), so
request N (from 1) has T(N) = 8,500 + 800 (N - 1) prompt tokens. Every request answers 200 output
tokens. Each is reported with the usage a provider following its cache rules reports for it; the
test module works out by hand what each scenario would have read and written.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from projections.money import Price
from projections.normalized import RequestRecord, Usage

T0 = datetime(2025, 11, 3, 9, 0, 0, tzinfo=UTC)
MODEL = "claude-sonnet-4-5-20250929"
SONNET = Price("claude-sonnet-4-5", Decimal(3), Decimal(15), Decimal("3.75"), Decimal(6), Decimal("0.30"))
"""Sonnet 4.5's list prices per million tokens (platform.claude.com/docs/en/about-claude/pricing):
$3 input, $15 output, $3.75 5-minute write, $6 1-hour write, $0.30 read."""
MARK = {"type": "ephemeral"}
SYSTEM_TOKENS = 8_000
OUTPUT = 200


def prompt(n: int) -> int:
    """T(n): the prompt tokens of request ``n`` (from 1)."""
    return 8_500 + 800 * (n - 1)


def text(tag: str, tokens: int) -> str:
    """Filler of about ``tokens`` tokens at four characters each."""
    unit = f"{tag} lorem ipsum dolor sit amet "
    chars = tokens * 4
    return (unit * (chars // len(unit) + 1))[:chars]


def history(n: int, *, mark_last: bool) -> list[dict[str, Any]]:
    """The messages of request ``n``: n user messages and n - 1 replies between them."""
    messages: list[dict[str, Any]] = []
    for turn in range(n):
        if turn:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": text(f"reply {turn}", 300)}]}
            )
        messages.append({"role": "user", "content": [{"type": "text", "text": text(f"ask {turn}", 500)}]})
    if mark_last:
        messages[-1]["content"][-1]["cache_control"] = MARK
    return messages


def body(n: int, *, clock: str = "", mark_system: bool = True, mark_last: bool = True) -> dict[str, Any]:
    """Request ``n``'s body: one system block (opening with ``clock`` when given) and its history."""
    system: dict[str, Any] = {"type": "text", "text": clock + text("system", SYSTEM_TOKENS)}
    if mark_system:
        system["cache_control"] = MARK
    return {
        "model": MODEL,
        "max_tokens": 4096,
        "system": [system],
        "messages": history(n, mark_last=mark_last),
    }


def request(n: int, at_seconds: float, request_body: dict[str, Any], usage: Usage) -> RequestRecord:
    started = T0 + timedelta(seconds=at_seconds)
    return RequestRecord(
        key=f"msg_{n}",
        ordinal=n - 1,
        lineage="main",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=MODEL,
        started_at=started,
        first_token_at=started + timedelta(seconds=2),
        body=request_body,
        usage=usage,
        client_version="claude-code 2.1.40",
    )


def usage(*, read: int, write: int, uncached: int = 0) -> Usage:
    return Usage(uncached, read, write, 0, OUTPUT, "anthropic", {})


def clock_session() -> list[RequestRecord]:
    """Ten requests a minute apart whose system prompt opens with the time of the request: its
    block changes every request, so each request reads nothing and writes its whole prompt."""
    return [
        request(
            n,
            60 * (n - 1),
            body(n, clock=f"Current time: 09:{n - 1:02d}:00\n"),
            usage(read=0, write=prompt(n)),
        )
        for n in range(1, 11)
    ]


IDLE_STARTS = (0, 60, 120, 720, 780, 2_580, 2_640, 9_840)
"""Eight requests: a minute apart, then idle 10 minutes, a minute, idle 30 minutes, a minute, idle 2 hours."""


def idle_session() -> list[RequestRecord]:
    """A stable prompt with idle gaps past the 5-minute TTL: after each gap the request reads
    nothing and writes its whole prompt; otherwise it reads its predecessor's prompt."""
    records = []
    for n, start in enumerate(IDLE_STARTS, 1):
        fresh = n == 1 or start - IDLE_STARTS[n - 2] > 300
        reported = usage(read=0, write=prompt(n)) if fresh else usage(read=prompt(n - 1), write=800)
        records.append(request(n, start, body(n), reported))
    return records


def system_only_session() -> list[RequestRecord]:
    """Ten requests a minute apart with a breakpoint on the system prompt only: each reads the
    8,000-token system prompt and sends its whole history uncached."""
    records = []
    for n in range(1, 11):
        history_tokens = prompt(n) - SYSTEM_TOKENS
        reported = (
            usage(read=0, write=SYSTEM_TOKENS, uncached=history_tokens)
            if n == 1
            else usage(read=SYSTEM_TOKENS, write=0, uncached=history_tokens)
        )
        records.append(request(n, 60 * (n - 1), body(n, mark_last=False), reported))
    return records


def edited_session() -> list[RequestRecord]:
    """Four requests a minute apart; from the third on, the first user message is cut short in
    place (a stripped tool result), so the third reads only the system prompt."""
    records = []
    for n in range(1, 5):
        request_body = body(n)
        if n >= 3:
            first = request_body["messages"][0]["content"][0]
            first["text"] = first["text"][:1_000] + " [truncated]" + first["text"][1_012:]
        if n == 1:
            reported = usage(read=0, write=prompt(1))
        elif n == 3:
            reported = usage(read=SYSTEM_TOKENS, write=prompt(3) - SYSTEM_TOKENS)
        else:
            reported = usage(read=prompt(n - 1), write=800)
        records.append(request(n, 60 * (n - 1), request_body, reported))
    return records


def billing_header(n: int) -> dict[str, Any]:
    """Claude Code's attribution block as 2.1.40 sends it, with a ``cch`` that changes per request."""
    return {
        "type": "text",
        "text": f"x-anthropic-billing-header: cc_version=2.1.40.a1b; cc_entrypoint=cli; cch={n:05x};",
    }


def attribution_session() -> list[RequestRecord]:
    """Five Claude Code requests a minute apart to an endpoint that keys its cache on every byte:
    the attribution block before the system prompt changes each time, so each writes all again."""
    records = []
    for n in range(1, 6):
        request_body = body(n)
        request_body["system"] = [billing_header(n), *request_body["system"]]
        records.append(request(n, 60 * (n - 1), request_body, usage(read=0, write=prompt(n))))
    return records
