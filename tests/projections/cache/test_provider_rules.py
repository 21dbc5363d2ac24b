"""The dated provider rules and the predictors that read them, checked against the providers' own examples."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from projections.cache.analysis import analyse_lineage
from projections.cache.predict.automatic import openai_breakpoints
from projections.cache.predict.cache_models import CallInput, cache_facts
from projections.cache.predict.prediction import predict_calls
from projections.cache.render.rendering import render_request
from projections.normalized import RequestRecord
from projections.providers.mechanics import MECHANICS
from projections.providers.rules import MODEL_RULES, model_rule
from projections.usage import gemini_usage, openai_chat_usage, openai_responses_usage
from tests.projections.cache.builders import T0, words

SYSTEM = {"role": "system", "content": words("stable instructions", 9_000)}


def chat(messages: list[dict[str, Any]], model: str = "gpt-5.6", **extra: Any) -> Any:
    return render_request("openai", "chat", {"model": model, "messages": messages, **extra})


def user(tag: str, chars: int = 400) -> dict[str, Any]:
    return {"role": "user", "content": words(tag, chars)}


def test_every_rule_cites_an_https_page_and_the_day_it_was_checked() -> None:
    for rule in MODEL_RULES:
        for source in (rule.minimum_source, rule.multipliers_source, rule.window_source):
            if source is None:
                assert rule.window is None, rule.family
                continue
            assert urlsplit(source.url).scheme == "https", rule.family
            assert source.checked.isoformat() == "2026-12-03", rule.family
    for mechanics in MECHANICS.values():
        assert urlsplit(mechanics.source.url).scheme == "https"


def test_gpt_5_6_and_later_cache_at_breakpoints_and_older_models_by_128_token_steps() -> None:
    newer = model_rule("openai", "gpt-5.6-2026-06-01")
    older = model_rule("openai", "gpt-5.5")
    assert newer is not None
    assert newer.scheme == "openai-breakpoints"
    assert dict(newer.write_multipliers)["30m"] == 1.25
    assert older is not None
    assert older.scheme == "openai-prefix"
    assert dict(older.write_multipliers) == {}
    assert cache_facts("openai", "gpt-4o").granularity == 128
    assert cache_facts("openrouter", "openai/gpt-5.6").granularity == 1


def test_24_hour_retention_keeps_an_older_openai_prompt_past_the_in_memory_lifetime() -> None:
    first = chat([SYSTEM, user("question")], model="gpt-4o", prompt_cache_retention="24h")
    again = chat([SYSTEM, user("question"), {"role": "assistant", "content": "ok"}], model="gpt-4o")
    later = chat(
        [SYSTEM, user("question"), {"role": "assistant", "content": "ok"}],
        model="gpt-4o",
        prompt_cache_retention="24h",
    )
    assert first.params["prompt_cache_retention"] == "24h"
    assert first.header_hash == again.header_hash  # a setting, not part of the cache key
    calls = [
        CallInput("a", first, "openai", "main", T0),
        CallInput("b", later, "openai", "main", T0 + timedelta(hours=3)),
    ]
    _, b = predict_calls(calls)
    assert b.read > 0
    assert b.label is None


def test_gpt_5_6_implicit_caching_loses_a_stable_prefix_when_only_the_last_message_changes() -> None:
    # The guide's warning: the implicit breakpoint sits at the newest user or tool message, so a
    # stable prefix followed by a changing suffix can miss although the prefix did not change.
    first = chat([SYSTEM, user("first question", 3_000)])
    second = chat([SYSTEM, user("second question", 3_000)])
    a, b = predict_calls(
        [
            CallInput("a", first, "openai", "main", T0),
            CallInput("b", second, "openai", "main", T0 + timedelta(minutes=1)),
        ]
    )
    assert a.read == 0
    assert a.write_5m == first.cum_tokens[-1]
    assert b.read == 0
    assert b.label is not None
    assert b.label.startswith("prefix-changed")


def test_an_explicit_breakpoint_on_the_stable_prefix_is_read_back_exactly() -> None:
    system = {
        "role": "system",
        "content": [
            {"type": "text", "text": SYSTEM["content"], "prompt_cache_breakpoint": {"mode": "explicit"}}
        ],
    }
    first = chat([system, user("first question", 3_000)])
    second = chat([system, user("second question", 3_000)])
    assert [p for p, _ in openai_breakpoints(first, cache_facts("openai", "gpt-5.6"))] == [0, 1]
    assert first.prefix_hashes[0] == second.prefix_hashes[0]  # the marker is not content
    _, b = predict_calls(
        [
            CallInput("a", first, "openai", "main", T0),
            CallInput("b", second, "openai", "main", T0 + timedelta(minutes=1)),
        ]
    )
    assert b.read == first.cum_tokens[1]
    assert b.write_5m == second.cum_tokens[-1] - first.cum_tokens[1]


def test_explicit_mode_without_a_breakpoint_writes_nothing() -> None:
    request = chat([SYSTEM, user("question", 3_000)], prompt_cache_options={"mode": "explicit"})
    (only,) = predict_calls([CallInput("a", request, "openai", "main", T0)])
    assert only.read == 0
    assert only.write == 0
    assert only.label == "no-breakpoint"


def deepseek(messages: list[dict[str, Any]]) -> Any:
    return render_request("deepseek", "chat", {"model": "deepseek-v4-flash", "messages": messages})


def test_deepseek_hits_a_whole_unit_and_persists_a_common_prefix_for_the_next_request() -> None:
    # The guide's examples: A+B then A+B+C hits A+B; A+B then A+C misses but persists A, so A+D hits A.
    a = {"role": "system", "content": words("analyst", 6_000)}
    ab = deepseek([a, user("B")])
    abc = deepseek([a, user("B"), {"role": "assistant", "content": "answer"}, user("C")])
    ac = deepseek([a, user("C")])
    ad = deepseek([a, user("D")])
    at = [T0 + timedelta(seconds=30 * i) for i in range(4)]
    _first, second = predict_calls(
        [CallInput("1", ab, "deepseek", "x", at[0]), CallInput("2", abc, "deepseek", "x", at[1])]
    )
    assert second.read == ab.cum_tokens[-1] + abc.tokens[2]  # the unit at the end of the first output
    _, miss, hit = predict_calls(
        [
            CallInput("1", ab, "deepseek", "y", at[0]),
            CallInput("2", ac, "deepseek", "z", at[1]),
            CallInput("3", ad, "deepseek", "w", at[2]),
        ]
    )
    assert miss.read == 0
    assert hit.read == ab.cum_tokens[1]


def test_openai_cache_writes_are_their_own_bucket_inside_the_prompt_count() -> None:
    chat_usage = openai_chat_usage(
        {
            "prompt_tokens": 5_000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 3_000, "cache_write_tokens": 1_500},
        }
    )
    assert (chat_usage.uncached_input, chat_usage.cache_read, chat_usage.cache_write_5m) == (
        500,
        3_000,
        1_500,
    )
    responses = openai_responses_usage(
        {
            "input_tokens": 2_000,
            "output_tokens": 3,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 2_000},
        }
    )
    assert (responses.uncached_input, responses.cache_write_5m) == (0, 2_000)
    older = openai_chat_usage(
        {"prompt_tokens": 5_000, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 4_096}}
    )
    assert older.cache_write_5m is None


def test_gemini_hits_are_read_from_the_usage_field_of_2026() -> None:
    usage = gemini_usage(
        {"usage": {"total_input_tokens": 9_000, "total_cached_tokens": 8_192, "total_output_tokens": 40}}
    )
    assert (usage.uncached_input, usage.cache_read, usage.output) == (808, 8_192, 40)


def test_a_breakpoint_keeps_its_own_ttl_and_otherwise_inherits_the_request_s() -> None:
    facts = cache_facts("openai", "gpt-5.6")

    def marked(ttl: str | None) -> dict[str, Any]:
        mark: dict[str, Any] = {"mode": "explicit"} | ({"ttl": ttl} if ttl else {})
        return {
            "role": "system",
            "content": [{"type": "text", "text": SYSTEM["content"], "prompt_cache_breakpoint": mark}],
        }

    own = chat([marked("12h"), user("q")])
    inherited = chat([marked(None), user("q")], prompt_cache_options={"ttl": "12h"})
    default = chat([marked(None), user("q")])
    assert openai_breakpoints(own, facts)[0] == (0, "12h")
    assert openai_breakpoints(inherited, facts) == [(0, "12h"), (1, "12h")]
    assert openai_breakpoints(default, facts) == [(0, "30m"), (1, "30m")]


def test_a_gpt_5_6_session_goes_through_the_whole_analysis() -> None:

    system = {
        "role": "system",
        "content": [
            {"type": "text", "text": SYSTEM["content"], "prompt_cache_breakpoint": {"mode": "explicit"}}
        ],
    }
    bodies = [
        {"model": "gpt-5.6", "messages": [system, user("first question", 3_000)]},
        {"model": "gpt-5.6", "messages": [system, user("second question", 3_000)]},
    ]
    records = [
        RequestRecord(
            key=f"r{i}",
            ordinal=i,
            lineage="main",
            provider="openai",
            platform="openai",
            api="chat",
            model="gpt-5.6",
            started_at=T0 + timedelta(minutes=i),
            first_token_at=T0 + timedelta(minutes=i, seconds=1),
            body=request_body,
            usage=None,
        )
        for i, request_body in enumerate(bodies)
    ]
    first, second = analyse_lineage(records)
    assert first.figures.predicted_read == 0
    assert first.figures.predicted_write == first.rendered.cum_tokens[-1]
    assert second.rendered is not None
    assert second.figures.predicted_read == second.rendered.cum_tokens[1]  # the marked system prompt
    assert second.label is not None
