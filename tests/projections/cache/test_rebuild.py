from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from projections.cache.render.rebuild import StoredRequest, StoredRequestError, rebuild_request
from projections.cache.render.rendering import render_request
from projections.normalized import JSON
from tests.projections.cache.builders import anthropic_usage, body, conversation, record


def stored(request_body: dict[str, Any]) -> tuple[StoredRequest, dict[str, JSON]]:
    """The request as a store keeps it (units, markers, params, no body) and its blocks by hash."""
    rendered = render_request("anthropic", "messages", request_body)
    units = [
        list(unit)
        for unit in zip(
            rendered.block_hashes,
            rendered.tiers,
            rendered.roles,
            rendered.message_indexes,
            rendered.block_indexes,
            rendered.message_ids,
            strict=True,
        )
    ]
    markers = [{"position": m.position, "ttl": m.ttl, "automatic": m.automatic} for m in rendered.markers]
    raws = {rendered.block_hashes[i]: json.loads(rendered.block(i).canonical) for i in range(len(units))}
    facts = replace(record("r0", 0, request_body, usage=anthropic_usage(10, 0, 3_000)), body=None)
    return StoredRequest(7, facts, dict(rendered.params), units, markers, has_body=True), raws


def test_a_stored_request_rebuilds_to_a_body_with_the_same_units_and_markers() -> None:
    original = body(conversation(6), marks=(3, 5), ttl="1h")
    request, raws = stored(original)

    rebuilt, rendered = rebuild_request(request, raws)

    assert rebuilt.body is not None
    assert rendered is not None
    again = render_request("anthropic", "messages", original)
    assert rendered.prefix_hashes == again.prefix_hashes
    assert rendered.markers == again.markers
    assert rebuilt.usage == request.record.usage


def test_a_request_logged_without_its_body_is_taken_as_it_is() -> None:
    request, _ = stored(body(conversation(2)))
    usage_only = replace(request, has_body=False)

    assert rebuild_request(usage_only, {}) == (request.record, None)


def test_a_missing_block_is_named_with_the_request() -> None:
    request, raws = stored(body(conversation(4)))
    missing = str(request.units[2][0])
    del raws[missing]

    with pytest.raises(StoredRequestError, match=f"request 7: block {missing} is not stored"):
        rebuild_request(request, raws)


def test_a_block_that_no_longer_hashes_to_its_unit_is_named_by_position() -> None:
    request, raws = stored(body(conversation(4)))
    changed = str(request.units[-1][0])
    raws[changed] = {"type": "text", "text": "not what was sent"}

    with pytest.raises(
        StoredRequestError, match=rf"request 7: unit {len(request.units) - 1} does not rebuild"
    ):
        rebuild_request(request, raws)


def test_an_unknown_api_is_refused_naming_it() -> None:
    request, raws = stored(body(conversation(2)))
    odd = replace(request, record=replace(request.record, api="completions"))

    with pytest.raises(StoredRequestError, match="request 7: unknown api 'completions'"):
        rebuild_request(odd, raws)
