from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from projections.cache.predict.transcript import (
    TranscriptCall,
    appended_tokens,
    exact_share,
    predict_transcript,
)
from projections.normalized import Usage
from tests.projections.cache.builders import SONNET, T0

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def call(
    minutes: float,
    read: int,
    write: int,
    *,
    write_1h: int = 0,
    model: str = SONNET,
    lineage: str = "main",
    compaction: bool = False,
) -> TranscriptCall:
    usage = Usage(3, read, write, write_1h, 10, "anthropic")
    return TranscriptCall(T0 + timedelta(minutes=minutes), model, usage, lineage, compaction)


def test_a_call_reads_what_the_previous_call_read_and_wrote() -> None:
    calls = [call(0, 0, 18000), call(1, 18000, 300), call(2, 18300, 500)]
    predictions = predict_transcript(calls)
    assert [p.read for p in predictions] == [None, 18000, 18300]
    assert exact_share(calls, predictions) == 1.0


def test_the_ttl_is_five_minutes_unless_the_previous_call_wrote_one_hour_tokens() -> None:
    five = predict_transcript([call(0, 0, 9000), call(6, 0, 9000)])
    hour = predict_transcript([call(0, 0, 0, write_1h=9000), call(30, 9000, 0)])
    assert five[1].read == 0
    assert five[1].rule == "ttl-expired"
    assert hour[1].read == 9000
    assert hour[1].rule == "carried"


def test_a_compaction_leaves_only_the_static_prefix() -> None:
    calls = [call(0, 12000, 5000), call(1, 17000, 900), call(2, 12000, 3000, compaction=True)]
    assert predict_transcript(calls)[2].read == 12000
    assert predict_transcript(calls, static_prefix=11000)[2].read == 11000


def test_a_model_change_and_separate_lineages_are_honoured() -> None:
    calls = [
        call(0, 0, 9000),
        call(0.5, 0, 4000, lineage="subagent"),
        call(1, 9000, 100),
        call(2, 0, 9100, model="claude-opus-4-1"),
    ]
    predictions = predict_transcript(calls)
    assert [p.rule for p in predictions] == ["first-call", "first-call", "carried", "model-changed"]
    assert exact_share(calls[:1], predictions[:1]) is None


def test_appended_tokens_is_the_difference_of_prompt_totals() -> None:
    assert (
        appended_tokens(Usage(4, 0, 18764, 0, 1, "anthropic"), Usage(7, 18764, 255, 0, 1, "anthropic")) == 258
    )


def read_transcript(path: Path) -> list[TranscriptCall]:
    calls: dict[tuple[Any, Any], TranscriptCall] = {}
    compaction = False
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            compaction = True
        if entry.get("type") != "assistant" or entry["message"].get("model") == "<synthetic>":
            continue
        key = (entry["message"].get("id"), entry.get("requestId"))
        if key in calls:
            continue
        raw = entry["message"]["usage"]
        split = raw.get("cache_creation") or {}
        usage = Usage(
            raw["input_tokens"],
            raw.get("cache_read_input_tokens"),
            split.get("ephemeral_5m_input_tokens", raw.get("cache_creation_input_tokens")),
            split.get("ephemeral_1h_input_tokens", 0),
            raw.get("output_tokens"),
            "anthropic",
            raw,
        )
        started = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
        lineage = "subagent" if entry.get("isSidechain") or path.name.startswith("agent-") else "main"
        calls[key] = TranscriptCall(started, entry["message"]["model"], usage, lineage, compaction)
        compaction = False
    return list(calls.values())


@pytest.mark.shared_data
def test_claude_code_transcripts_are_predicted_almost_always_exactly() -> None:
    folder = SHARED / "claude-code"
    if not folder.exists():
        pytest.skip("shared data folder is absent")
    judged = exact = 0
    for path in sorted(folder.rglob("*.jsonl")):
        calls = read_transcript(path)
        predictions = predict_transcript(calls)
        for c, p in zip(calls, predictions, strict=True):
            if p.read is not None:
                judged += 1
                exact += p.exact(c.usage.cache_read)
    assert judged == 174
    assert exact / judged >= 0.97


def test_after_a_system_rewrite_only_the_measured_tools_prefix_is_predicted() -> None:
    def call(minute: int, read: int, write: int, rewrite: bool = False) -> TranscriptCall:
        usage = Usage(10, read, write, 0, 5, "dsh")
        return TranscriptCall(
            T0 + timedelta(minutes=minute), "m", usage, "main", system_changed_before=rewrite
        )

    calls = [
        call(0, 0, 9000),
        call(1, 9000, 500),
        call(2, 1200, 8400, rewrite=True),
        call(3, 1200, 8800, rewrite=True),
    ]
    predictions = predict_transcript(calls)
    assert [(p.read, p.rule) for p in predictions] == [
        (None, "first-call"),
        (9000, "carried"),
        (None, "system-changed"),
        (1200, "system-changed"),
    ]


def test_openai_automatic_caching_carries_the_previous_prompt_in_128_token_steps() -> None:
    def openai_call(minutes: float, uncached: int, read: int, write: int | None = None) -> TranscriptCall:
        usage = Usage(uncached, read, write, None, 10, "openai")
        return TranscriptCall(T0 + timedelta(minutes=minutes), "gpt-5-codex", usage, "main")

    calls = [openai_call(0, 4000, 0), openai_call(1, 332, 3968), openai_call(2, 900, 100)]
    predicted = [p.read for p in predict_transcript(calls)]
    # 4,000 prompt tokens cache as 1,024 + 128·23; 4,300 as 1,024 + 128·25.
    assert predicted == [None, 3968, 4224]
    explicit = [openai_call(0, 296, 0, 8704), openai_call(1, 284, 8704, 512)]
    assert [p.read for p in predict_transcript(explicit)] == [None, 8704]


def dsh_deepseek(read: int | None) -> Usage:
    """A DeepSeek call as a dsh log reports it: uncached input and cache read, never a cache write."""
    return Usage(400, read, None, None, 90, "dsh")


def test_an_unreported_cache_write_leaves_the_carried_read_unknown_not_zero() -> None:
    calls = [
        TranscriptCall(T0 + timedelta(seconds=seconds), "deepseek-chat", dsh_deepseek(read), "main")
        for seconds, read in ((0, 0), (30, 8064), (60, 8448))
    ]
    predictions = predict_transcript(calls)

    assert [p.read for p in predictions] == [None, None, None]
    assert [p.rule for p in predictions] == ["first-call", "carried", "carried"]
    assert exact_share(calls, predictions) is None


def test_an_unreported_cache_read_leaves_the_carried_read_unknown_not_zero() -> None:
    unread = Usage(3, None, 12_000, 0, 10, "anthropic")
    calls = [
        call(0, 0, 9_000),
        TranscriptCall(T0 + timedelta(minutes=1), SONNET, unread, "main"),
        call(2, 12_000, 0),
    ]

    assert [p.read for p in predict_transcript(calls)] == [None, 9_000, None]


def test_after_a_compaction_the_static_prefix_is_unknown_when_the_first_call_reported_no_read() -> None:
    first = TranscriptCall(T0, "deepseek-chat", dsh_deepseek(None), "main")
    after = TranscriptCall(T0 + timedelta(minutes=1), "deepseek-chat", dsh_deepseek(2_000), "main", True)

    assert predict_transcript([first, after])[1].read is None
