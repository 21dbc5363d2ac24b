from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.usage import (
    UsageError,
    anthropic_usage,
    codex_usage,
    deepseek_usage,
    dsh_usage,
    gemini_usage,
    normalize_usage,
    openai_chat_usage,
    openai_responses_usage,
    openrouter_usage,
    usage_to_dsh,
)


def test_anthropic_splits_the_write_into_five_minute_and_one_hour() -> None:
    raw = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 500,
        "cache_read_input_tokens": 9000,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 300},
        "output_tokens": 7,
        "service_tier": "standard",
    }
    usage = anthropic_usage(raw)
    assert (
        usage.uncached_input,
        usage.cache_read,
        usage.cache_write_5m,
        usage.cache_write_1h,
        usage.output,
    ) == (
        3,
        9000,
        200,
        300,
        7,
    )
    assert usage.raw == raw
    assert usage.prompt_total == 9503


def test_anthropic_without_a_split_counts_writes_as_five_minute() -> None:
    usage = anthropic_usage({"input_tokens": 1, "cache_creation_input_tokens": 40, "output_tokens": 2})
    assert (usage.cache_write_5m, usage.cache_write_1h, usage.cache_read) == (40, None, None)


def test_openai_chat_and_responses_take_cached_tokens_out_of_the_prompt() -> None:
    chat = openai_chat_usage(
        {"prompt_tokens": 1200, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1024}}
    )
    responses = openai_responses_usage(
        {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1152}, "output_tokens": 1}
    )
    assert (chat.uncached_input, chat.cache_read, chat.cache_write, chat.convention) == (
        176,
        1024,
        None,
        "openai",
    )
    assert (responses.uncached_input, responses.cache_read) == (48, 1152)


def test_openai_without_details_reports_no_cache_read() -> None:
    usage = openai_chat_usage({"prompt_tokens": 10, "completion_tokens": 1})
    assert (usage.uncached_input, usage.cache_read, usage.hit_rate) == (10, None, None)


def test_gemini_deepseek_and_openrouter() -> None:
    gemini = gemini_usage(
        {
            "usageMetadata": {
                "promptTokenCount": 5000,
                "cachedContentTokenCount": 4096,
                "candidatesTokenCount": 10,
                "thoughtsTokenCount": 5,
            }
        }
    )
    deepseek = deepseek_usage(
        {
            "prompt_tokens": 900,
            "prompt_cache_hit_tokens": 640,
            "prompt_cache_miss_tokens": 260,
            "completion_tokens": 3,
        }
    )
    router = openrouter_usage(
        {
            "prompt_tokens": 3000,
            "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 900},
        }
    )
    assert (gemini.uncached_input, gemini.cache_read, gemini.output, gemini.convention) == (
        904,
        4096,
        15,
        "gemini",
    )
    assert (deepseek.uncached_input, deepseek.cache_read) == (260, 640)
    assert (router.uncached_input, router.cache_read, router.cache_write_5m) == (100, 2000, 900)


def test_dsh_usage_takes_the_one_hour_share_out_of_the_writes() -> None:
    usage = dsh_usage(
        {
            "inputTokens": 1,
            "cacheReadTokens": 2,
            "cacheWriteTokens": 30,
            "cacheWrite1hTokens": 10,
            "outputTokens": 4,
        }
    )
    assert (usage.cache_write_5m, usage.cache_write_1h) == (20, 10)
    assert usage_to_dsh(usage) == {
        "inputTokens": 1,
        "cacheReadTokens": 2,
        "cacheWriteTokens": 30,
        "cacheWrite1hTokens": 10,
        "outputTokens": 4,
    }


@pytest.mark.parametrize(
    ("shape", "raw", "field"),
    [
        ("anthropic", {"input_tokens": -1}, "input_tokens"),
        ("anthropic", {"output_tokens": 1.5}, "output_tokens"),
        (
            "anthropic",
            {"cache_creation": {"ephemeral_1h_input_tokens": "3"}},
            "cache_creation.ephemeral_1h_input_tokens",
        ),
        ("openai", {"prompt_tokens": True}, "prompt_tokens"),
        (
            "openai",
            {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 6}},
            "prompt_tokens_details.cached_tokens",
        ),
        ("dsh", {"inputTokens": -4}, "inputTokens"),
    ],
)
def test_negative_or_non_integer_counts_are_refused_naming_the_key(shape: str, raw: Any, field: str) -> None:
    with pytest.raises(UsageError) as caught:
        normalize_usage(shape, raw)
    assert caught.value.field == field


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown usage shape"):
        normalize_usage("cohere", {})


@given(
    uncached=st.integers(0, 10**7),
    read=st.integers(0, 10**7),
    write_5m=st.integers(0, 10**7),
    write_1h=st.integers(0, 10**7),
)
def test_anthropic_and_dsh_spellings_agree_on_every_bucket(
    uncached: int, read: int, write_5m: int, write_1h: int
) -> None:
    anthropic = anthropic_usage(
        {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write_5m + write_1h,
            "cache_creation": {"ephemeral_5m_input_tokens": write_5m, "ephemeral_1h_input_tokens": write_1h},
            "output_tokens": 1,
        }
    )
    again = dsh_usage(usage_to_dsh(anthropic))
    assert (again.uncached_input, again.cache_read, again.cache_write_5m, again.cache_write_1h) == (
        uncached,
        read,
        write_5m,
        write_1h,
    )


def test_codex_takes_reads_and_writes_out_of_the_input_and_keeps_reasoning_in_raw() -> None:
    raw = {
        "input_tokens": 9500,
        "cached_input_tokens": 8704,
        "cache_write_input_tokens": 512,
        "output_tokens": 60,
        "reasoning_output_tokens": 20,
        "total_tokens": 9560,
    }
    usage = codex_usage(raw)
    buckets = (usage.uncached_input, usage.cache_read, usage.cache_write_5m, usage.output)
    assert buckets == (284, 8704, 512, 60)
    assert (usage.convention, usage.raw) == ("openai", raw)
    older = codex_usage({"input_tokens": 4300, "cached_input_tokens": 3968, "output_tokens": 90})
    assert (older.uncached_input, older.cache_write) == (332, None), "no write field: unreported"


def test_codex_refuses_reasoning_beyond_the_output() -> None:
    with pytest.raises(UsageError) as error:
        codex_usage({"input_tokens": 10, "output_tokens": 5, "reasoning_output_tokens": 6})
    assert error.value.field == "reasoning_output_tokens"
