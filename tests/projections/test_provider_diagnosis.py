"""The provider's own cache diagnosis: read from every response shape, and set against the bytes.

The response shapes follow the providers' documented examples: Anthropic's ``diagnostics`` on the
Messages response (and on ``message_start``'s message in a stream), OpenAI's
``prompt_cache_diagnostics`` on the Responses object (and on ``response.completed`` in a stream).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from projections.formats.anthropic.connectome import parse_connectome_record
from projections.formats.traffic.payloads import response_facts
from projections.providers.diagnosis import (
    ProviderDiagnosis,
    anthropic_diagnosis,
    diagnosis_from_json,
    disagreement,
    engine_tier,
    openai_diagnosis,
)


def anthropic_message(diagnostics: Any) -> dict[str, Any]:
    return {
        "id": "msg_2",
        "type": "message",
        "model": "claude-sonnet-4-5",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 1750},
        "diagnostics": diagnostics,
    }


SYSTEM_CHANGED = {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 1700}}


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def test_a_messages_json_body_gives_its_reason_and_missed_tokens() -> None:
    facts = response_facts({"status_code": 200, "body": anthropic_message(SYSTEM_CHANGED)}, "anthropic")
    assert facts.diagnosis == ProviderDiagnosis("anthropic", "system_changed", 1700)


def test_a_messages_stream_gives_the_reason_of_its_message_start() -> None:
    message = anthropic_message(SYSTEM_CHANGED)
    stream = sse(
        {"type": "message_start", "message": message},
        {"type": "message_delta", "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    )
    facts = response_facts({"status_code": 200, "body_raw": stream}, "anthropic")
    assert facts.diagnosis == ProviderDiagnosis("anthropic", "system_changed", 1700)
    assert facts.usage is not None
    assert facts.usage["output_tokens"] == 5


@pytest.mark.parametrize(
    "diagnostics",
    [None, {"cache_miss_reason": None}, {}, "system_changed", {"cache_miss_reason": {"type": ""}}],
    ids=["null", "comparison-still-running", "empty", "not-an-object", "no-type"],
)
def test_a_response_without_a_stated_reason_has_no_diagnosis(diagnostics: Any) -> None:
    assert anthropic_diagnosis(anthropic_message(diagnostics)) is None
    assert response_facts(anthropic_message(diagnostics), "anthropic").diagnosis is None


def test_a_reason_that_cannot_compare_keeps_no_missed_tokens() -> None:
    diagnosis = anthropic_diagnosis(
        anthropic_message({"cache_miss_reason": {"type": "previous_message_not_found"}})
    )
    assert diagnosis == ProviderDiagnosis("anthropic", "previous_message_not_found", None)
    assert not diagnosis.is_miss


def test_an_openai_responses_body_and_stream_give_the_miss_reason() -> None:
    response = {
        "id": "resp_2",
        "object": "response",
        "status": "completed",
        "model": "gpt-5.6",
        "usage": {"input_tokens": 3000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8},
        "prompt_cache_diagnostics": {
            "type": "cache_miss",
            "reason": "tools_changed",
            "cache_missed_tokens": 2900,
            "comparison_reusable_tokens": 2900,
        },
    }
    expected = ProviderDiagnosis("openai", "tools_changed", 2900)
    assert response_facts(response, "openai").diagnosis == expected
    stream = sse(
        {"type": "response.created", "response": {**response, "prompt_cache_diagnostics": None}},
        {"type": "response.completed", "response": response},
    )
    assert response_facts({"status": 200, "body_raw": stream}, "openai").diagnosis == expected


def test_an_openai_outcome_other_than_a_miss_is_kept_as_its_type() -> None:
    hit = openai_diagnosis({"prompt_cache_diagnostics": {"type": "cache_hit"}})
    assert hit == ProviderDiagnosis("openai", "cache_hit", None)
    assert not hit.is_miss


def test_a_connectome_call_reads_the_diagnosis_of_its_raw_response() -> None:
    exchange = parse_connectome_record(
        {
            "type": "call",
            "kind": "stream",
            "timestamp": "2026-01-05T09:00:01Z",
            "durationMs": 1000,
            "requestSummary": {"model": "claude-sonnet-4-5"},
            "rawResponse": anthropic_message(SYSTEM_CHANGED),
        }
    )
    assert exchange is not None
    assert exchange.diagnosis == ProviderDiagnosis("anthropic", "system_changed", 1700)


def test_a_diagnosis_survives_its_json() -> None:
    diagnosis = ProviderDiagnosis("openai", "input_changed", 12)
    assert diagnosis_from_json(diagnosis.to_json()) == diagnosis
    assert diagnosis_from_json(None) is None
    assert diagnosis_from_json({"reason": ""}) is None


@pytest.mark.parametrize(
    ("reason", "tier"),
    [
        ("system_changed", "system"),
        ("tools_changed", "tools"),
        ("messages_changed", "messages"),
        ("model_changed", "model"),
        ("previous_message_not_found", "messages"),
        ("unavailable", None),
        ("unavailable", "system"),
    ],
)
def test_anthropic_reasons_that_agree_or_cannot_compare_are_no_disagreement(
    reason: str, tier: str | None
) -> None:
    assert disagreement(ProviderDiagnosis("anthropic", reason, 100), tier) is None


def test_a_reason_naming_another_tier_than_the_bytes_disagrees() -> None:
    why = disagreement(ProviderDiagnosis("anthropic", "tools_changed", 100), "messages")
    assert why == "the provider says tools_changed, the bytes change first in messages"


def test_a_miss_where_the_bytes_show_an_identical_prefix_disagrees() -> None:
    why = disagreement(ProviderDiagnosis("anthropic", "system_changed", 100), None)
    assert why == "the provider says system_changed, the bytes show an identical prefix"


def test_openai_reasons_map_onto_our_tiers() -> None:
    assert disagreement(ProviderDiagnosis("openai", "input_changed", 5), "system") is None
    assert disagreement(ProviderDiagnosis("openai", "input_changed", 5), "messages") is None
    assert disagreement(ProviderDiagnosis("openai", "input_changed", 5), "tools") is not None
    # A setting the provider names is not one of our tiers: nothing to set against the bytes.
    assert disagreement(ProviderDiagnosis("openai", "reasoning_effort_changed", 5), "messages") is None
    assert disagreement(ProviderDiagnosis("openai", "cache_hit", None), None) is None
    assert disagreement(ProviderDiagnosis("openai", "cache_hit", None), "messages") == (
        "the provider found no divergence, the bytes change first in messages"
    )


def test_the_engine_tier_names_a_new_model_and_new_settings_apart_from_the_unit_tier() -> None:
    assert engine_tier(None) is None
    assert engine_tier({"tier": "messages", "cause": "edited"}) == "messages"
    assert engine_tier({"tier": "tools", "cause": "model-changed"}) == "model"
    assert engine_tier({"tier": "tools", "cause": "params-changed"}) == "params"
    assert disagreement(ProviderDiagnosis("anthropic", "model_changed", 9), "params") is None
