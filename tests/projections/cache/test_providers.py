from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from projections.cache.predict.cache_models import (
    CallInput,
    UnknownModelError,
    cache_facts,
    openai_cached_tokens,
    split_writes,
)
from projections.cache.predict.prediction import predict_calls
from projections.cache.render.rendering import render_request
from projections.normalized import Usage
from tests.projections.cache.builders import T0

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


@pytest.mark.parametrize(
    ("platform", "model", "minimum"),
    [
        ("anthropic", "claude-sonnet-4-20250514", 1024),
        ("anthropic", "claude-opus-4-1-20250805", 1024),
        ("anthropic", "claude-3-5-haiku-20241022", 2048),
        ("anthropic", "claude-opus-4-6", 4096),
        ("anthropic", "claude-haiku-4-5-20251001", 4096),
        ("bedrock", "anthropic.claude-opus-4-5-20251101-v1:0", 4096),
        ("openai", "gpt-4o", 1024),
        # The minimums as the provider pages state them on 2026-12-03 (see projections/providers/rules.py).
        ("anthropic", "claude-opus-4-7", 2048),
        ("anthropic", "claude-opus-4-8", 1024),
        ("anthropic", "claude-sonnet-4-6", 1024),
        ("anthropic", "claude-opus-5", 512),
        ("anthropic", "claude-fable-5-1", 512),
        ("gemini", "gemini-2.5-pro", 2048),
        ("gemini", "gemini-2.5-flash", 2048),
        ("gemini", "gemini-3.5-flash", 4096),
    ],
)
def test_minimum_cacheable_prefix_per_model(platform: str, model: str, minimum: int) -> None:
    assert cache_facts(platform, model).minimum_tokens == minimum


def test_the_table_is_versioned_by_date_and_refuses_unknown_models() -> None:
    assert cache_facts("anthropic", "claude-opus-4-5", date(2025, 12, 1)).minimum_tokens == 4096
    assert cache_facts("anthropic", "claude-opus-4-5", date(2025, 1, 1)).minimum_tokens == 1024
    with pytest.raises(UnknownModelError, match="'mistral-large'"):
        cache_facts("mistral", "mistral-large")


def test_openai_caches_in_128_token_steps_after_1024() -> None:
    assert openai_cached_tokens(1023) == 0
    assert openai_cached_tokens(1024) == 1024
    assert openai_cached_tokens(1151) == 1024
    assert openai_cached_tokens(1152) == 1152
    assert openai_cached_tokens(5000) == 1024 + 128 * 31


def test_writes_split_into_one_hour_and_five_minute_shares() -> None:
    # read = A, 1-hour write = B - A, 5-minute write = C - B
    assert split_writes(1000, [(3000, "1h"), (5000, "5m")], 1024) == (2000, 2000)
    assert split_writes(0, [(500, "5m")], 1024) == (0, 0)
    assert split_writes(4000, [(3000, "1h"), (5000, "5m")], 1024) == (1000, 0)


def chat(messages: list[dict[str, Any]], model: str = "gpt-4o") -> Any:
    return render_request("openai", "chat", {"model": model, "messages": messages})


def test_openai_reads_the_shared_prefix_rounded_down_to_its_step() -> None:
    system = {"role": "system", "content": "s" * 8000}
    first = chat([system, {"role": "user", "content": "q1" * 200}])
    second = chat([system, {"role": "user", "content": "q1" * 200}, {"role": "assistant", "content": "a"}])
    calls = [
        CallInput("a", first, "openai", "main", T0),
        CallInput("b", second, "openai", "main", T0 + timedelta(minutes=2)),
        CallInput("c", second, "openai", "main", T0 + timedelta(minutes=30)),
    ]
    a, b, c = predict_calls(calls)
    assert a.read == 0
    assert b.read == openai_cached_tokens(first.cum_tokens[-1])
    assert b.label is None
    assert c.read == 0
    assert c.label == "ttl-expired"


def test_openai_prompts_below_1024_tokens_are_never_cached() -> None:
    tiny = chat([{"role": "user", "content": "hello"}])
    (prediction,) = predict_calls([CallInput("a", tiny, "openai", "main", T0)])
    assert prediction.read == 0
    assert prediction.label == "below-minimum"


def trace_usage(response: dict[str, Any]) -> Usage:
    raw: dict[str, Any] = {}
    if isinstance(response.get("body"), dict):
        raw = dict(response["body"]["usage"])
    for line in str(response.get("body_raw") or "").splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if event.get("type") == "message_start":
                raw = dict(event["message"]["usage"])
            elif event.get("type") == "message_delta":
                raw.update(event.get("usage", {}))
    return Usage(
        raw["input_tokens"],
        raw["cache_read_input_tokens"],
        raw["cache_creation_input_tokens"],
        0,
        raw.get("output_tokens"),
        "anthropic",
        raw,
    )


@pytest.mark.shared_data
def test_the_claude_trace_sample_is_predicted_exactly() -> None:
    path = SHARED / "claude-trace" / "log-sample.jsonl"
    if not path.exists():
        pytest.skip("shared data folder is absent")
    calls, usages = [], []
    for n, line in enumerate(path.read_text().splitlines()):
        entry = json.loads(line)
        request_body = entry["request"]["body"]
        usage = trace_usage(entry["response"])
        started = datetime.fromtimestamp(entry["request"]["timestamp"], UTC)
        answered = datetime.fromtimestamp(entry["response"]["timestamp"], UTC)
        rendered = render_request("anthropic", "messages", request_body, usage=usage)
        lineage = "side" if "haiku" in request_body["model"] else "main"
        calls.append(CallInput(str(n), rendered, "anthropic", lineage, started, answered, usage.cache_read))
        usages.append(usage)
    predictions = predict_calls(calls)
    sonnet = 0
    for call, usage, prediction in zip(calls, usages, predictions, strict=True):
        if "haiku" in call.rendered.model:
            assert (prediction.read, prediction.write) == (0, 0)
            assert prediction.label in ("no-breakpoint", "below-minimum")
        else:
            sonnet += 1
            assert prediction.read == usage.cache_read
            assert prediction.write == usage.cache_write
    assert sonnet == 3
