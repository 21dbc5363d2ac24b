from __future__ import annotations

import json
from hashlib import sha256
from typing import Any

import pytest

from projections.cache.predict.client_records import (
    CACHESCOPE_SCHEME,
    MEMBRANE_SCHEME,
    ReceiptError,
    credit_event_data,
    credit_from_wire_receipt,
    decode_kv_slot,
    membrane_receipt,
    parse_credit_event,
    parse_wire_receipt,
    render_record_event_data,
    verify_render_record_event,
    verify_wire_receipt,
)
from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import body, conversation


def request() -> Any:
    return render_request("anthropic", "messages", body(conversation(4), marks=(3,)))


def hand_made_receipt(request_body: dict[str, Any], marker_unit_counts: list[int]) -> dict[str, Any]:
    """A receipt built the way the host describes it, independently of the engine."""
    units: list[Any] = [*request_body["tools"], *request_body["system"]]
    for message in request_body["messages"]:
        units.extend(message["content"])
    clean = [{k: v for k, v in u.items() if k != "cache_control"} for u in units]

    def digest(items: list[Any]) -> tuple[str, int]:
        text = json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return sha256(text.encode()).hexdigest(), len(text.encode("utf-16-le")) // 2 // 4

    markers = []
    for ordinal, count in enumerate(marker_unit_counts):
        prefix_hash, offset = digest(clean[:count])
        markers.append({"ordinal": ordinal, "prefixHash": prefix_hash, "estimatedOffset": offset})
    return {"requestHash": digest(clean)[0], "markers": markers}


def test_a_hand_made_membrane_receipt_verifies_against_the_request_as_sent() -> None:
    request_body = body(conversation(4), marks=(3,))
    rendered = render_request("anthropic", "messages", request_body)
    receipt = parse_wire_receipt(hand_made_receipt(request_body, [3, 7]))
    assert receipt == membrane_receipt(rendered)
    assert verify_wire_receipt(receipt, rendered) == []
    assert credit_from_wire_receipt("r", receipt).credited_tokens == receipt.markers[1].estimated_offset


def test_a_receipt_of_a_differently_rendered_request_is_a_mismatch() -> None:
    request_body = body(conversation(4), marks=(3,))
    edited = body(conversation(4), marks=(3,))
    edited["messages"][1]["content"][0]["text"] = "other"
    receipt = parse_wire_receipt(hand_made_receipt(edited, [3, 7]))
    mismatches = verify_wire_receipt(receipt, render_request("anthropic", "messages", request_body))
    assert [m.place for m in mismatches] == ["request", "marker 1"]


def test_a_receipt_with_a_bad_marker_is_refused_naming_it() -> None:
    with pytest.raises(ReceiptError, match=r"markers\[0\]"):
        parse_wire_receipt({"requestHash": "h", "markers": [{"ordinal": "0"}]})
    with pytest.raises(ReceiptError, match="requestHash"):
        parse_wire_receipt({"markers": []})


def kv_slot(version: int) -> dict[str, Any]:
    if version == 1:
        units = [
            {"kind": "system", "key": "s", "tokens": 1200, "offset": 0},
            {"kind": "chunk", "key": "c1", "tokens": 800, "offset": 1200},
        ]
    else:
        units = [
            {"kind": "system", "key": "s", "tokens": 1200},
            {"kind": "chunk", "key": "c1", "tokens": 800, "gap": 0},
        ]
    return {
        "format": version,
        "requestRef": "req-7",
        "leafRuns": [[0, 2], [3, 1]] if version == 1 else [0, 2, 3, 1],
        "cache": {
            "immutablePrefixHash": "p1",
            "layout": {"units": units},
            "markers": [{"unitIndex": 1}, {"unitIndex": 2}],
        },
    }


@pytest.mark.parametrize("version", [1, 2])
def test_kv_unified_slots_of_both_formats_decode_to_the_same_credit(version: int) -> None:
    credit = decode_kv_slot(kv_slot(version))
    assert credit.credited_tokens == 2000
    assert credit.marker_offsets == (1200, 2000)
    assert credit.leaves == (0, 1, 5)
    assert credit.immutable_prefix_hash == "p1"


def test_a_kv_slot_for_another_immutable_prefix_credits_nothing() -> None:
    assert decode_kv_slot(kv_slot(1), current_prefix_hash="p2").credited_tokens == 0


def test_a_kv_slot_of_an_unknown_format_or_bad_layout_is_refused() -> None:
    with pytest.raises(ReceiptError, match="unknown format 3"):
        decode_kv_slot({**kv_slot(1), "format": 3})
    broken = kv_slot(1)
    del broken["cache"]["layout"]["units"][1]["offset"]
    with pytest.raises(ReceiptError, match=r"units\[1\] needs an integer offset"):
        decode_kv_slot(broken)


def test_credit_events_round_trip() -> None:
    credit = decode_kv_slot(kv_slot(2))
    data = credit_event_data(credit)
    assert data == {
        "requestRef": "req-7",
        "creditedTokens": 2000,
        "markers": [{"ordinal": 0, "offset": 1200}, {"ordinal": 1, "offset": 2000}],
    }
    again = parse_credit_event(data)
    assert (again.credited_tokens, again.marker_offsets) == (2000, (1200, 2000))
    with pytest.raises(ReceiptError, match="creditedTokens"):
        parse_credit_event({"requestRef": "x"})


def test_render_record_events_verify_under_both_hash_schemes() -> None:
    rendered = request()
    data = render_record_event_data("req-1", rendered)
    assert data["hashScheme"] == CACHESCOPE_SCHEME
    assert verify_render_record_event(data, rendered) == []
    membrane = {
        "hashScheme": MEMBRANE_SCHEME,
        "markers": [
            {"ordinal": m.ordinal, "prefixHash": m.prefix_hash} for m in membrane_receipt(rendered).markers
        ],
    }
    assert verify_render_record_event(membrane, rendered) == []
    data["markers"][0]["prefixHash"] = "0" * 32
    assert [m.place for m in verify_render_record_event(data, rendered)] == ["marker 0"]
    with pytest.raises(ReceiptError, match="unknown hashScheme"):
        verify_render_record_event({"hashScheme": "md5", "markers": [{"ordinal": 0}]}, rendered)
