from __future__ import annotations

from projections.cache.render.render_record import markers_sent, render_record
from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import body, conversation


def test_the_render_record_lists_each_breakpoint_with_its_prefix() -> None:
    rendered = render_request("anthropic", "messages", body(conversation(6), marks=(3, 5), ttl="1h"))
    record = render_record(rendered)
    assert [(m.ordinal, m.tier, m.identity, m.ttl) for m in record.markers] == [
        (0, "system", "system:0", "1h"),
        (1, "messages", "messages:#3.0", "1h"),
        (2, "messages", "messages:#5.0", "1h"),
    ]
    assert [m.prefix_hash for m in record.markers] == [
        rendered.prefix_hashes[m.position] for m in rendered.markers
    ]
    assert record.markers[2].prefix_tokens == rendered.cum_tokens[-1]
    assert record.last == record.markers[2]


def test_a_request_without_markers_has_an_empty_record() -> None:
    rendered = render_request(
        "anthropic", "messages", {"model": "claude-sonnet-4", "messages": [{"role": "user", "content": "x"}]}
    )
    assert render_record(rendered).markers == ()
    assert render_record(rendered).last is None


def test_a_top_level_cache_control_is_recorded_as_the_automatic_breakpoint() -> None:
    request = {**body(conversation(2), marks=()), "cache_control": {"type": "ephemeral"}}
    markers = render_record(render_request("anthropic", "messages", request)).markers
    assert [m.automatic for m in markers] == [False, True]  # the system prompt's own marker, then it


def test_the_markers_sent_are_those_of_the_record_and_unknown_without_a_body() -> None:
    record = [
        {"ordinal": 0, "position": 1, "tier": "system", "identity": "system:0", "prefix_tokens": 1200,
         "prefix_hash": "ab", "ttl": "1h"},
    ]  # fmt: skip
    assert markers_sent({"record": record}, has_body=True) == [
        {"ordinal": 0, "tier": "system", "position": 1, "identity": "system:0", "prefix_tokens": 1200,
         "ttl": "1h", "automatic": False},
    ]  # fmt: skip
    assert markers_sent({"record": []}, has_body=True) == []
    assert markers_sent({"record": []}, has_body=False) is None
