"""What each lever changes in one request, and the two sessions that need the bytes changed."""

from __future__ import annotations

from decimal import Decimal

from projections.cache.predict.cache_models import cache_facts
from projections.cache.render.rendering import render_request
from projections.cache.whatif.attribution import has_attribution_block, without_attribution
from projections.cache.whatif.levers import rolling_positions, with_rolling_breakpoints, with_ttl_1h
from projections.cache.whatif.session import whatif_session
from projections.cache.whatif.stable_prefix import as_sent, place
from tests.projections.cache.whatif.sessions import (
    MODEL,
    SONNET,
    attribution_session,
    billing_header,
    body,
    edited_session,
    prompt,
    usage,
)
from tests.projections.cache.whatif.test_session import figures, micro

OUTPUT_COST = Decimal(5 * 200 * 15) / 1_000_000


def test_the_attribution_block_is_found_by_its_text_and_dropped_with_its_marker_kept() -> None:
    request = body(2)
    request["system"] = [{**billing_header(7), "cache_control": {"type": "ephemeral"}}, *request["system"]]
    assert has_attribution_block(render_request("anthropic", "messages", request))
    stripped = without_attribution(request)
    assert stripped is not None
    assert [block["text"][:6] for block in stripped["system"]] == ["system"]
    assert stripped["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert without_attribution(body(2)) is None
    one_string = {
        **body(2),
        "system": "x-anthropic-billing-header: cc_version=2.1.40; cch=1;\nYou are Claude.",
    }
    assert without_attribution(one_string) == {**one_string, "system": "You are Claude."}


def test_the_1_hour_lever_asks_for_an_hour_on_every_breakpoint() -> None:
    request = render_request("anthropic", "messages", body(3))
    longer = with_ttl_1h(request)
    assert longer is not None
    assert [m.ttl for m in longer.markers] == ["1h", "1h"]
    assert with_ttl_1h(longer) is None


def test_the_rolling_breakpoint_sits_on_the_last_system_block_and_the_last_message() -> None:
    request = render_request("anthropic", "messages", body(3, mark_last=False))
    assert [m.position for m in request.markers] == [0]
    rolled = with_rolling_breakpoints(request)
    assert rolled is not None
    assert [m.position for m in rolled.markers] == rolling_positions(request) == [0, len(request) - 1]
    assert with_rolling_breakpoints(rolled) is None  # already there


def test_a_request_that_only_extends_its_predecessor_is_sent_as_recorded() -> None:
    facts = cache_facts("anthropic", MODEL)
    first = render_request("anthropic", "messages", body(1), usage=usage(read=0, write=prompt(1)))
    second = render_request("anthropic", "messages", body(2), usage=usage(read=prompt(1), write=800))
    placed = place(second, as_sent(first, facts), facts)
    assert placed.rendered is second
    assert not placed.moved


def test_an_in_place_change_keeps_the_predecessor_s_prefix_and_the_recorded_total() -> None:
    facts = cache_facts("anthropic", MODEL)
    first = render_request(
        "anthropic", "messages", body(1, clock="09:00\n"), usage=usage(read=0, write=prompt(1))
    )
    second = render_request(
        "anthropic", "messages", body(2, clock="09:01\n"), usage=usage(read=0, write=prompt(2))
    )
    placed = place(second, as_sent(first, facts), facts)
    sent = placed.rendered
    assert placed.moved
    assert sent.prefix_hashes[: len(first)] == first.prefix_hashes  # the predecessor's prompt, unchanged
    assert sent.total_tokens == prompt(2)
    assert sent.cum_tokens[len(first)] == prompt(1)
    assert sum(sent.tokens) == sent.cum_tokens[-1]
    assert sent.markers[-1].position == len(sent) - 1


def test_an_edited_message_moved_after_the_history_reads_the_whole_predecessor() -> None:
    whatif = whatif_session(edited_session(), prices=[SONNET])
    # As recorded request 3 reads the 8,000-token system prompt and writes 10,100 - 8,000 = 2,100;
    # reads 8,500 + 8,000 + 10,100 = 26,600, writes 8,500 + 800 + 2,100 + 800 = 12,200.
    out = Decimal(4 * 200 * 15) / 1_000_000
    figures(
        whatif.result("as-recorded"),
        read=26_600,
        write=12_200,
        cost=micro(26_600 * 0.3 + 12_200 * 3.75) + out,
    )
    # Moved after the history, request 3 reads T(2) = 9,300 and request 4 continues it, reading
    # T(3) = 10,100: reads 27,900, writes 8,500 + 3 x 800 = 10,900.
    figures(
        whatif.result("stable-prefix"),
        read=27_900,
        write=10_900,
        cost=micro(27_900 * 0.3 + 10_900 * 3.75) + out,
    )


def test_without_the_attribution_block_each_request_reads_its_predecessor() -> None:
    whatif = whatif_session(attribution_session(), prices=[SONNET])
    # As recorded: the block changes every request, so each writes T(N): 8,500 + ... + 11,700 = 50,500.
    figures(whatif.result("as-recorded"), read=0, write=50_500, cost=micro(50_500 * 3.75) + OUTPUT_COST)
    # Without it: reads T(1..4) = 38,800, writes 8,500 + 4 x 800 = 11,700.
    result = whatif.result("no-attribution-block")
    figures(result, read=38_800, write=11_700, cost=micro(38_800 * 0.3 + 11_700 * 3.75) + OUTPUT_COST)
    assert result.touched == 5
    assert "5 requests open their system prompt" in result.reason
    assert whatif.result("best").combination == ("no-attribution-block",)
