from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from projections.cache.explain.verdict import (
    LABEL_REMEDIES,
    TRANSCRIPT_UNEXPLAINED_REMEDY,
    Verdict,
    VerdictError,
    below_minimum_note,
    verdict,
)
from projections.cache.results import RequestResult
from projections.cache.session_analysis import analyse_records
from projections.normalized import RequestRecord
from projections.providers.diagnosis import ProviderDiagnosis
from tests.projections.cache.builders import (
    SONNET,
    T0,
    anthropic_usage,
    body,
    conversation,
    record,
    words,
)


def verdicts(records: list[RequestRecord]) -> list[Verdict]:
    results = analyse_records(records).results
    return [verdict(r.data, has_body=r.has_body) for r in results]


def transcript_call(key: str, ordinal: int, minutes: float, read: int, write: int) -> RequestRecord:
    """A call as a transcript logs it: usage, no body."""
    started = T0 + timedelta(minutes=minutes)
    return RequestRecord(
        key=key,
        ordinal=ordinal,
        lineage="main",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=SONNET,
        started_at=started,
        usage=anthropic_usage(50, read, write),
    )


def expired_pair(minutes: float) -> list[RequestRecord]:
    history = conversation(20)
    return [
        record("r0", 0, body(history, marks=(19,))),
        record("r1", 1, body([*history, *conversation(2)], marks=(21,)), minutes=minutes),
    ]


def test_a_miss_with_an_unchanged_prefix_gets_the_remedy_of_its_label() -> None:
    second = verdicts(expired_pair(minutes=6))[1]

    assert second.label == "ttl-expired"
    assert second.first_change is None
    assert second.remedy.startswith("The entry expired after 6 min idle: ttl 1h on the stable prefix")
    assert second.detail.endswith("expired after 6 min without a read")


def test_a_ttl_miss_after_more_than_an_hour_idle_is_not_offered_the_1_hour_ttl() -> None:
    second = verdicts(expired_pair(minutes=4 * 60 + 2))[1]

    assert second.label == "ttl-expired"
    assert second.remedy.startswith("The entry expired after 4 h 2 min idle, longer than the 1-hour TTL")
    assert "ttl 1h" not in second.remedy
    assert "nothing to change" in second.remedy


def test_a_ttl_miss_in_a_transcript_states_the_gap_since_the_previous_call() -> None:
    calls = [transcript_call("c0", 0, 0, 0, 9_000), transcript_call("c1", 1, 50, 0, 9_400)]
    second = verdicts(calls)[1]

    assert second.label == "ttl-expired"
    assert second.detail.endswith("50 min idle, TTL 5 min")
    assert second.remedy.startswith("The entry expired after 50 min idle: ttl 1h")


def test_a_stored_ttl_miss_without_its_gap_gets_the_conditional_remedy() -> None:
    data = {"figures": {}, "label": "ttl-expired", "first_change": None}
    assert verdict(data, has_body=True).remedy == LABEL_REMEDIES["ttl-expired"]
    assert "past an hour idle no TTL keeps it" in LABEL_REMEDIES["ttl-expired"]


def test_a_request_that_reads_what_it_should_has_no_label_and_no_remedy() -> None:
    second = verdicts(expired_pair(minutes=4))[1]

    assert (second.label, second.remedy, second.material) == (None, "", False)
    assert second.figures.predicted_read == second.figures.wire_allows


def test_a_changed_prefix_gets_the_remedy_of_the_change_not_of_its_label() -> None:
    history = conversation(12)
    edited = copy.deepcopy(history)
    edited[2]["content"][0]["text"] = "an edited message"
    records = [
        record("r0", 0, body(history, marks=(11,))),
        record("r1", 1, body(edited, marks=(11,)), minutes=1),
    ]

    second = verdicts(records)[1]

    assert str(second.label).startswith("prefix-changed@messages")
    assert second.first_change is not None
    assert second.first_change.cause == "edited"
    assert second.remedy == second.first_change.remedy != ""
    assert second.remedy not in LABEL_REMEDIES.values()


def unmarked_pair(messages: list[dict[str, Any]], *, system: str) -> list[RequestRecord]:
    """Two requests of one lineage a minute apart, with no cache_control marker anywhere."""
    request = body(messages, system=[{"type": "text", "text": system}], tool_defs=[])
    return [record("r0", 0, request), record("r1", 1, request, minutes=1)]


def test_a_prompt_below_the_model_s_minimum_gets_no_marker_remedy_but_says_it_is_too_short() -> None:
    tiny = [{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}]
    result = analyse_records(unmarked_pair(tiny, system="Be brief.")).results[1]

    said = verdict(result.data, has_body=True)

    assert said.label == "no-breakpoint"
    prompt = result.data["prompt_tokens"]
    assert isinstance(prompt, int)
    assert prompt < 20
    assert result.data["minimum_tokens"] == 1_024
    assert said.remedy == below_minimum_note(prompt, 1_024)
    assert said.remedy.startswith(f"The prompt is {prompt} tokens, below the model's minimum cacheable")
    assert "1,024 tokens" in said.remedy
    assert LABEL_REMEDIES["no-breakpoint"] not in said.remedy


def test_a_prompt_above_the_model_s_minimum_keeps_the_marker_remedy() -> None:
    result = analyse_records(unmarked_pair(conversation(3), system=words("system", 8_000))).results[1]

    said = verdict(result.data, has_body=True)

    assert said.label == "no-breakpoint"
    prompt = result.data["prompt_tokens"]
    assert isinstance(prompt, int)
    assert prompt > 1_024
    assert said.remedy == LABEL_REMEDIES["no-breakpoint"]


def test_an_analysis_stored_before_the_minimum_was_kept_gets_the_remedy_of_its_label() -> None:
    tiny = [{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}]
    result = analyse_records(unmarked_pair(tiny, system="Be brief.")).results[1]
    old = {k: v for k, v in result.data.items() if k != "minimum_tokens"}

    assert verdict(old, has_body=True).remedy == LABEL_REMEDIES["no-breakpoint"]


def test_an_unexplained_miss_without_bodies_asks_for_the_bytes() -> None:
    # 12,000 tokens written, a minute later only 3,000 of them read back.
    records = [transcript_call("c0", 0, 0, 0, 12_000), transcript_call("c1", 1, 1, 3_000, 9_700)]
    result = analyse_records(records).results[1]

    said = verdict(result.data, has_body=result.has_body)

    assert (said.label, said.material) == ("unexplained", True)
    assert said.remedy == TRANSCRIPT_UNEXPLAINED_REMEDY
    assert "claude-trace" in said.remedy
    assert "diagnostics" in said.remedy
    # It claims neither an identical prefix nor an eviction: it ranks what the figures allow.
    assert "identical prefix inside the TTL" not in said.detail
    assert "cannot be shown" in said.detail
    assert [c["cause"] for c in result.data["candidates"]] == ["bytes-changed", "provider-side"]
    # The same analysis of a request whose bytes were logged blames provider-side eviction instead.
    assert verdict(result.data, has_body=True).remedy == LABEL_REMEDIES["unexplained"]


def test_each_verdict_lists_the_warnings_of_its_own_request_only() -> None:
    records = [transcript_call("c0", 0, 0, 0, 12_000), transcript_call("c1", 1, 1, 3_000, 9_700)]
    first, second = verdicts(records)

    assert first.warnings == ()
    assert [w.kind for w in second.warnings] == ["unexplained-miss"]
    assert "reported read 3000, the previous call left 12000 cached" in second.warnings[0].message
    assert "identical prefix" not in second.warnings[0].message


def test_the_verdict_json_has_every_part_of_the_verdict() -> None:
    said = verdicts(expired_pair(minutes=6))[1].to_json()

    assert set(said) == {
        "first_change",
        "figures",
        "label",
        "detail",
        "remedy",
        "material",
        "badge",
        "meaning",
        "warnings",
        "provider_diagnosis",
        "client_version",
    }
    assert set(said["figures"]) == {
        "credited",
        "wire_allows",
        "reported_read",
        "reported_write",
        "predicted_read",
        "predicted_write",
    }


def test_the_verdict_of_a_stored_analysis_equals_the_verdict_of_the_fresh_one() -> None:
    # The store keeps data as JSON: the verdict read back from it must not change.
    result: RequestResult = analyse_records(expired_pair(minutes=6)).results[1]
    stored = json.loads(json.dumps(result.data))

    assert verdict(stored, has_body=True) == verdict(result.data, has_body=True)


def test_the_verdict_carries_the_provider_s_diagnosis_and_the_client_version_of_its_request() -> None:
    first, second = expired_pair(minutes=1)
    diagnosis = ProviderDiagnosis("anthropic", "messages_changed", 1200)
    records = [first, replace(second, provider_diagnosis=diagnosis, client_version="claude-code 2.1.39")]

    said = verdicts(records)

    assert said[0].provider_diagnosis is None
    assert said[0].to_json()["client_version"] is None
    assert said[1].provider_diagnosis == diagnosis
    assert said[1].to_json()["provider_diagnosis"] == {"reason": "messages_changed", "missed_tokens": 1200}
    assert said[1].to_json()["client_version"] == "claude-code 2.1.39"


def test_an_analysis_stored_before_the_provider_s_diagnosis_was_kept_has_none() -> None:
    result = analyse_records(expired_pair(minutes=6)).results[1]
    old = {k: v for k, v in result.data.items() if k not in ("provider_diagnosis", "client_version")}

    said = verdict(old, has_body=True)

    assert (said.provider_diagnosis, said.client_version) == (None, "")


def test_an_analysis_without_figures_is_refused_naming_the_field() -> None:
    with pytest.raises(VerdictError, match="field 'figures' is missing"):
        verdict({"label": "ttl-expired"}, has_body=True)


def test_a_first_change_without_its_cause_is_refused_naming_the_field() -> None:
    data = {"figures": {}, "first_change": {"position": 3, "tier": "messages"}}
    with pytest.raises(VerdictError, match=r"field 'first_change\.cause' is missing"):
        verdict(data, has_body=True)
