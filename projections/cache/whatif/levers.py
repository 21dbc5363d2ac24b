"""The changes a what-if scenario makes to one request, each on its own, before the replay.

A lever turns the request as sent into the request the scenario sends, or says it leaves it as it
was (``None``). Levers that move markers or lifetimes work on the rendering (the bytes, and so the
prefix hashes, stay as sent); levers that change bytes work on the body, which is rendered again
with the request's usage so its units still sum to the reported prompt. The stable-prefix lever
needs the request before it and lives in :mod:`projections.cache.whatif.stable_prefix`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final, Literal

from projections.cache.render.rendered_request import Marker, RenderedRequest
from projections.cache.render.rendering import last_cacheable
from projections.normalized import JSON
from projections.providers.mechanics import Scheme

Lever = Literal[
    "stable-prefix",
    "ttl-1h",
    "rolling-breakpoint",
    "no-attribution-block",
    "stable-cache-key",
    "extended-retention",
]

LEVERS: Final[tuple[Lever, ...]] = (
    "no-attribution-block",
    "stable-cache-key",
    "extended-retention",
    "rolling-breakpoint",
    "ttl-1h",
    "stable-prefix",
)
"""Every lever, in the order a scenario that pulls several applies them: the bytes first, then the
markers and their lifetimes, then the prefix kept from the request before, which keeps whatever
markers the others placed."""

ONE_HOUR: Final = "1h"

EXTENDED_RETENTION: Final[Mapping[Scheme, str]] = {"openai-prefix": "24h"}
"""The longer lifetime a scheme offers beside its default, by scheme: OpenAI's extended prompt
cache retention (``prompt_cache_retention: "24h"``, prompt-caching guide, "Prompt cache retention").
GPT-5.6's breakpoints take ``12h`` on Azure only (:data:`~projections.providers.mechanics.MECHANICS`),
which :func:`with_extended_retention` offers there."""


def with_ttl_1h(rendered: RenderedRequest) -> RenderedRequest | None:
    """Every Anthropic breakpoint asking for the 1-hour lifetime; ``None`` when all already do or
    the request has none (nothing is cached, whatever the lifetime)."""
    markers = rendered.markers
    if not markers or all(marker.ttl == ONE_HOUR for marker in markers):
        return None
    return replace(rendered, markers=tuple(Marker(m.position, ONE_HOUR, m.automatic) for m in markers))


def rolling_positions(rendered: RenderedRequest) -> list[int]:
    """Where the rolling-breakpoint scenario puts its markers: the last system block (the last tool
    when there is no system prompt) and the last block of the messages that can carry one."""
    # Units come in prefix order (tools, system, messages): the unit before the first message is
    # the last system block, or the last tool when there is no system prompt.
    start = rendered.tier_start("messages")
    head = start - 1 if start > 0 else None
    last = last_cacheable(rendered.raws[start:], rendered.kinds[start:])
    positions = [p for p in (head, None if last is None else start + last) if p is not None]
    return sorted(set(positions))


def with_rolling_breakpoints(rendered: RenderedRequest) -> RenderedRequest | None:
    """The request with markers on its last system block and on its last message (two of the four
    a request may carry), each with the lifetime the request asked for there; ``None`` when it
    carried exactly those already.

    Anthropic wants a 1-hour breakpoint before any 5-minute one: the system marker takes the 1-hour
    lifetime if any marker of the request had it, the message marker only if all had it.
    """
    positions = rolling_positions(rendered)
    if not positions:
        return None
    ttls = [marker.ttl for marker in rendered.markers]
    head_ttl = ONE_HOUR if ONE_HOUR in ttls else "5m"
    tail_ttl = ONE_HOUR if ttls and all(ttl == ONE_HOUR for ttl in ttls) else "5m"
    last = positions[-1]
    markers = tuple(Marker(p, tail_ttl if p == last and p != positions[0] else head_ttl) for p in positions)
    if [(m.position, m.ttl) for m in markers] == [(m.position, m.ttl) for m in rendered.markers]:
        return None
    return replace(rendered, markers=markers)


def with_extended_retention(
    rendered: RenderedRequest, scheme: Scheme, platform: str
) -> RenderedRequest | None:
    """The request asking for the longest retention its model offers; ``None`` where none is offered
    or it asked for it already."""
    lifetime = EXTENDED_RETENTION.get(scheme)
    if lifetime is not None:
        if rendered.params.get("prompt_cache_retention") == lifetime:
            return None
        return replace(rendered, params={**rendered.params, "prompt_cache_retention": lifetime})
    if scheme == "openai-breakpoints" and platform == "azure":
        options = rendered.params.get("prompt_cache_options")
        options = dict(options) if isinstance(options, dict) else {}
        if options.get("ttl") == "12h":
            return None
        markers = tuple(replace(m, ttl="12h") for m in rendered.markers)
        return replace(
            rendered,
            params={**rendered.params, "prompt_cache_options": {**options, "ttl": "12h"}},
            markers=markers,
        )
    return None


def with_cache_key(body: Mapping[str, JSON], key: str) -> dict[str, JSON] | None:
    """``body`` sent with ``prompt_cache_key`` ``key``; ``None`` when it was sent with it already."""
    if body.get("prompt_cache_key") == key:
        return None
    return {**body, "prompt_cache_key": key}
