"""Claude Code transcripts of a small fleet over days, each session's hit rate set by its plan, for the
alert tests: written by the demo's transcript writer, read back by the real importer.

Every session is ``calls`` requests a minute apart (inside the 5-minute TTL, so all but the first
are eligible); its first request writes its whole prompt (a cold start), every later one reads
``hit_rate`` of its prompt and writes the rest but three uncached tokens.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from dashboard.demo import pools
from dashboard.demo.cache_model import AnthropicCache, CacheUsage
from dashboard.demo.conversation import AgentProfile, Call, Conversation, UserEntry
from dashboard.demo.formats.claude_code import TranscriptContext, transcript_lines, write_transcript
from dashboard.models import AlertRule
from dashboard.models.alerts import DEFAULT_RULE, DEFAULT_RULE_NAME

MODEL = "claude-sonnet-4-5-20250929"
PRICE_WRITE_5M = Decimal("3.75")
PRICE_READ = Decimal("0.30")
"""The seeded price of claude-sonnet-4-5, USD per million tokens."""
UNCACHED = 3
OUTPUT = 180
CALL_GAP = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Plan:
    """Sessions of one source and client release, ``per_day`` a day from ``first`` for ``days`` days."""

    source: str
    version: str
    hit_rate: float
    first: datetime
    days: int
    per_day: int = 4
    calls: int = 10

    def starts(self) -> Iterator[datetime]:
        spacing = timedelta(hours=22) / self.per_day
        for day in range(self.days):
            for index in range(self.per_day):
                yield self.first + timedelta(days=day, minutes=30) + spacing * index


def prompt_tokens(index: int) -> int:
    """The prompt of a session's ``index``-th call: a conversation that grows a little each call."""
    return 20_000 + 600 * index


def call_usage(index: int, hit_rate: float) -> CacheUsage:
    prompt = prompt_tokens(index)
    if index == 0:
        return CacheUsage(UNCACHED, 0, prompt - UNCACHED, 0)
    read = round(hit_rate * prompt)
    return CacheUsage(UNCACHED, read, prompt - read - UNCACHED, 0)


def eligible_prompt(plan: Plan) -> int:
    """The prompt tokens of a plan's eligible calls over one of its days."""
    return plan.per_day * sum(prompt_tokens(index) for index in range(1, plan.calls))


def plain_hit_rate(plan: Plan) -> float:
    """Read ÷ prompt over every call of a plan's session, its cold start included."""
    usages = [call_usage(index, plan.hit_rate) for index in range(plan.calls)]
    return sum(u.cache_read for u in usages) / sum(u.prompt_total for u in usages)


def write_plan(root: Path, plan: Plan, seed: int = 7) -> list[Path]:
    """Write the plan's sessions under ``root/<source>/``; their paths."""
    rng = random.Random(f"{seed}:{plan.source}:{plan.version}:{plan.first.isoformat()}")
    paths: list[Path] = []
    for start in plan.starts():
        session_id = pools.uuid4(rng)
        conversation = Conversation(rng, AnthropicCache(), AgentProfile(MODEL, [], []), 0.0)
        moment = start
        for index in range(plan.calls):
            message = {"role": "user", "content": f"step {index} of {session_id}"}
            conversation.timeline.append(UserEntry(message=message, at=moment, kind="prompt"))
            content = [{"type": "text", "text": f"done with step {index}"}]
            conversation.timeline.append(
                Call(
                    lineage="main",
                    started=moment + timedelta(milliseconds=50),
                    first_token=moment + timedelta(seconds=1),
                    finished=moment + timedelta(seconds=3),
                    body={"model": MODEL},
                    message_id=pools.message_id(rng),
                    request_id=pools.request_id(rng),
                    content=content,
                    stop_reason="end_turn",
                    usage=call_usage(index, plan.hit_rate),
                    output_tokens=OUTPUT,
                )
            )
            moment += CALL_GAP
        context = TranscriptContext(
            rng=rng, session_id=session_id, cwd=f"/work/{plan.source}", version=plan.version
        )
        path = root / plan.source / "-work-project" / f"{session_id}.jsonl"
        write_transcript(path, transcript_lines(conversation, context))
        paths.append(path)
    return paths


def regression(end: datetime) -> tuple[Plan, Plan, Plan]:
    """Eight days to ``end``: alpha at 90 % on 2.1.0 for seven, then 2.2.0 at 30 % for the last
    24 hours; beta at 90 % on 2.1.0 throughout."""
    return (
        Plan("alpha", "2.1.0", 0.9, end - 8 * DAY, days=7, per_day=3, calls=19),
        Plan("alpha", "2.2.0", 0.3, end - DAY, days=1, per_day=3, calls=19),
        Plan("beta", "2.1.0", 0.9, end - 8 * DAY, days=8, per_day=3, calls=19),
    )


DAY = timedelta(days=1)
END = datetime(2026, 3, 9, tzinfo=UTC)
"""When the tests evaluate: the end of the eighth day."""
STEADY_ALPHA, BROKEN_ALPHA, STEADY_BETA = regression(END)
RECOVERED_ALPHA = Plan("alpha", "2.2.0", 0.9, END, days=1, per_day=3, calls=19)
"""The day after: the same release reads its cache again."""
STEADY_BETA_AFTER = Plan("beta", "2.1.0", 0.9, END, days=1, per_day=3, calls=19)


def ensure_default_rule() -> AlertRule:
    """The rule the migrations add; made again when a transactional test before flushed it."""
    return AlertRule.objects.get_or_create(name=DEFAULT_RULE_NAME, defaults=DEFAULT_RULE)[0]
