"""Claude Code's attribution block: found by its text, and taken out of a request body.

From 2.1.36 Claude Code puts a block ``x-anthropic-billing-header: cc_version=2.1.37.abc;
cc_entrypoint=cli; cch=1f2e3;`` first in the system prompt (issue anthropics/claude-code#24168 and
the gateways that strip it: musistudio/claude-code-router#1220, ollama/ollama#14918). Before
2.1.181 its ``cch`` changes on every request, so an endpoint that keys its cache on the system
prompt's bytes (a gateway, a self-hosted server, any prefix cache that does not know the block)
misses on every request; ``CLAUDE_CODE_ATTRIBUTION_HEADER=0`` leaves the block out. The block is
found here by its text, whatever the renderer makes of it, and the scenario sends the body without it.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import JSON

ATTRIBUTION_PREFIX = "x-anthropic-billing-header:"
"""How the block's text starts."""


def is_attribution_text(text: object) -> bool:
    """Whether ``text`` is (or opens with) Claude Code's attribution line."""
    return isinstance(text, str) and text.lstrip().startswith(ATTRIBUTION_PREFIX)


def _block_text(block: JSON) -> object:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type", "text") == "text":
        return block.get("text")
    return None


def has_attribution_block(rendered: RenderedRequest) -> bool:
    """Whether the request's system prompt opens with the attribution block (a system unit of its
    own, or the first line of a system prompt sent as one string)."""
    start = rendered.tier_start("system")
    if start >= len(rendered) or rendered.tiers[start] != "system":
        return False
    return is_attribution_text(_block_text(rendered.raws[start]))


def without_attribution(body: Mapping[str, JSON]) -> dict[str, JSON] | None:
    """``body`` as Claude Code sends it with ``CLAUDE_CODE_ATTRIBUTION_HEADER=0``: the attribution
    block dropped from the front of the system prompt (its line, when the prompt is one string).
    ``None`` when the body carries no such block."""
    system = body.get("system")
    if isinstance(system, str):
        if not is_attribution_text(system):
            return None
        rest = system.lstrip().split("\n", 1)
        return {**body, "system": rest[1] if len(rest) > 1 else ""}
    if not isinstance(system, list) or not system or not is_attribution_text(_block_text(system[0])):
        return None
    first, *others = system
    text = _block_text(first)
    assert isinstance(text, str)
    lines = text.lstrip().split("\n", 1)
    if len(lines) > 1 and lines[1].strip():
        # The line opens a longer block: keep the rest of the block, and its marker if it has one.
        assert isinstance(first, dict)
        return {**body, "system": [{**first, "text": lines[1]}, *others]}
    if isinstance(first, dict) and "cache_control" in first and others:
        # A marker on the dropped block would have cached the prefix through it: it moves to the
        # block that now opens the system prompt, so the request keeps its breakpoints.
        head = others[0]
        if isinstance(head, dict) and "cache_control" not in head:
            others = [{**head, "cache_control": first["cache_control"]}, *others[1:]]
    return {**body, "system": others}
