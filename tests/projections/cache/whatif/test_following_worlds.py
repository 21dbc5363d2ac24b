"""A world that pulls rolling-breakpoint besides another's levers replays as that world while the
lever changes nothing, and goes on alone from the first request it changes: its figures are those
of replaying it on its own from the start."""

from __future__ import annotations

from dataclasses import replace

import pytest

from projections.cache.whatif import world
from projections.cache.whatif.session import WhatIf, whatif_session
from projections.normalized import RequestRecord
from tests.projections.cache.whatif.sessions import (
    SONNET,
    SYSTEM_TOKENS,
    body,
    clock_session,
    idle_session,
    prompt,
    request,
    system_only_session,
    usage,
)


def markers_dropped_midway() -> list[RequestRecord]:
    """Four requests with the markers where the lever puts them, each reading its predecessor's
    prompt, then six whose client stopped marking the last message, each reading the system prompt
    only: the lever changes requests 5 to 10."""
    records = []
    for n in range(1, 11):
        if n == 1:
            reported = usage(read=0, write=prompt(1))
        elif n <= 4:
            reported = usage(read=prompt(n - 1), write=800)
        else:
            reported = usage(read=SYSTEM_TOKENS, write=0, uncached=prompt(n) - SYSTEM_TOKENS)
        records.append(request(n, 60 * (n - 1), body(n, mark_last=n <= 4), reported))
    return records


def lagging_marker_untimed() -> list[RequestRecord]:
    """Four requests marking their last message, then six whose client marks the one before it, all
    logged without a first-token time (so what a request writes is readable at once): the world
    without the lever writes at request 5 a prefix the lever's world, marking the last message,
    would find in its lookback were it handed that world's state after request 5 rather than before."""
    records = []
    for n in range(1, 11):
        sent = body(n, mark_last=n <= 4)
        if n > 4:
            sent["messages"][-2]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        reported = usage(read=0, write=prompt(n)) if n == 1 else usage(read=prompt(n - 1), write=800)
        records.append(replace(request(n, 60 * (n - 1), sent, reported), first_token_at=None))
    return records


def figures(whatif: WhatIf) -> list[tuple[str, object, object, dict[str, object]]]:
    return [(r.scenario, r.tokens, r.cost, dict(r.by_request)) for r in whatif.results]


@pytest.mark.parametrize(
    "session",
    [markers_dropped_midway, lagging_marker_untimed, clock_session, idle_session, system_only_session],
    ids=["lever from request 5", "lagging marker, untimed", "never", "never, idle gaps", "from the first"],
)
def test_a_following_world_gives_what_replaying_it_alone_gives(
    session: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = session()  # type: ignore[operator]
    followed = whatif_session(records, prices=[SONNET])
    monkeypatch.setattr(world.World, "follow", lambda self, leader: None)
    alone = whatif_session(records, prices=[SONNET])
    assert figures(followed) == figures(alone)


def test_the_lever_changing_requests_midway_shows_in_their_figures_only() -> None:
    whatif = whatif_session(markers_dropped_midway(), prices=[SONNET], scenarios=["rolling-breakpoint"])
    changed = whatif.request_tokens()["rolling-breakpoint"]
    # Requests 1 to 4 are sent as recorded; from 5 on the lever marks the last message again, so each
    # reads its predecessor's whole prompt rather than the system prompt alone.
    assert set(changed) == {f"msg_{n}" for n in range(5, 11)}
    for n in range(5, 11):
        assert changed[f"msg_{n}"][1] == prompt(n - 1)
