from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from projections.providers.model_windows import (
    CLAUDE_CODE_AUTO_COMPACT,
    LONG_CONTEXT_BETA,
    WINDOW_RULES,
    auto_compact_rule,
    context_window,
    host_of_format,
    window_rule,
)


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-sonnet-4-20250514", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-3-5-haiku-20241022", 200_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("claude-opus-4-1-20250805", 200_000),
        ("claude-opus-4-5-20251101", 200_000),
        ("claude-opus-4-6", 1_000_000),
        ("claude-sonnet-4-6", 1_000_000),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
        ("claude-sonnet-4-5@20250929", 200_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-5", 400_000),
        ("gemini-2.5-pro", 1_048_576),
        ("deepseek-chat", 128_000),
        ("deepseek-v4-flash", 1_048_576),
    ],
)
def test_the_table_gives_each_family_its_window(model: str, tokens: int) -> None:
    found = context_window(model)
    assert found is not None
    assert (found.tokens, found.reason) == (tokens, "model table")


def test_an_unknown_model_has_no_window() -> None:
    assert context_window("llama-3-70b") is None
    assert window_rule("") is None


def test_the_1m_suffix_or_the_beta_header_opens_the_long_window() -> None:
    suffixed = context_window("claude-sonnet-4-5-20250929[1m]")
    beta = context_window("claude-sonnet-4-20250514", betas=("oauth-2025-04-20", LONG_CONTEXT_BETA))
    assert suffixed is not None
    assert (suffixed.tokens, suffixed.reason) == (1_000_000, "[1m] suffix")
    assert beta is not None
    assert (beta.tokens, beta.reason) == (1_000_000, "context-1m beta header")


def test_a_prompt_above_the_standard_window_proves_the_long_one() -> None:
    found = context_window("claude-sonnet-4-5-20250929", largest_prompt=250_000)
    assert found is not None
    assert found.tokens == 1_000_000
    below = context_window("claude-sonnet-4-5-20250929", largest_prompt=150_000)
    assert below is not None
    assert below.tokens == 200_000


def test_a_family_without_a_long_window_ignores_the_beta_header() -> None:
    found = context_window("claude-3-5-haiku-20241022", betas=(LONG_CONTEXT_BETA,), largest_prompt=900_000)
    assert found is not None
    assert found.tokens == 200_000


def test_every_rule_cites_a_page_and_the_day_it_was_checked() -> None:
    for rule in WINDOW_RULES:
        assert urlsplit(rule.source).scheme == "https", rule.family
        assert rule.checked.year >= 2026, rule.family
        assert rule.window > 0


def test_claude_code_compacts_thirty_three_thousand_tokens_before_the_window() -> None:
    assert CLAUDE_CODE_AUTO_COMPACT.threshold(200_000) == 167_000
    assert CLAUDE_CODE_AUTO_COMPACT.threshold(1_000_000) == 967_000
    assert all(urlsplit(source).scheme == "https" for source in CLAUDE_CODE_AUTO_COMPACT.sources)


def test_only_claude_code_logs_have_an_auto_compact_line() -> None:
    assert auto_compact_rule("claude-code") is CLAUDE_CODE_AUTO_COMPACT
    assert auto_compact_rule("claude-trace") is CLAUDE_CODE_AUTO_COMPACT
    assert auto_compact_rule("dsh") is None
    assert auto_compact_rule("openai-capture") is None


def test_claude_code_runs_the_4_6_models_at_200k_until_asked_for_1m() -> None:
    default = context_window("claude-opus-4-6", host="claude-code")
    assert default is not None
    assert (default.tokens, default.reason) == (200_000, "claude-code default")
    suffixed = context_window("claude-opus-4-6[1m]", host="claude-code")
    assert suffixed is not None
    assert suffixed.tokens == 1_000_000
    proven = context_window("claude-sonnet-4-6", host="claude-code", largest_prompt=300_000)
    assert proven is not None
    assert proven.tokens == 1_000_000
    api = context_window("claude-opus-4-6")
    assert api is not None
    assert api.tokens == 1_000_000


def test_the_formats_that_record_claude_code_name_it_as_their_host() -> None:
    assert host_of_format("claude-code") == "claude-code"
    assert host_of_format("claude-trace") == "claude-code"
    assert host_of_format("anthropic-capture") is None
