"""The request parameters that key a provider's cache besides the prompt, and what each re-keys (DESIGN §7).

Anthropic scopes some parameters to a tier: changing ``tool_choice`` re-keys the messages only,
toggling web search the system prompt and the messages, so each joins the prefix-hash chain where
its tier starts. Automatic caches key on all of them at once, in the header.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.cache.render.canonical import canonical_bytes, digest
from projections.cache.render.rendered_request import TIERS, Tier, tier_start
from projections.cache.render.units import Units
from projections.normalized import JSON

NON_KEYING_PARAMS = ("prompt_cache_retention", "prompt_cache_options")
"""Cache settings kept with a request but not part of its cache key: how long an entry lives and
whether OpenAI adds its implicit breakpoint (developers.openai.com/api/docs/guides/prompt-caching,
checked 2026-12-03). The predictor reads them; the prefix hashes leave them out."""


def cache_params(provider: str, api: str, body: Mapping[str, JSON]) -> dict[str, JSON]:
    """The request parameters that key the provider's cache besides the prompt itself (DESIGN §7),
    and the cache settings of :data:`NON_KEYING_PARAMS`, kept so the predictor can apply them."""
    keys = (
        "tool_choice",
        "thinking",
        "effort",
        "reasoning",
        "reasoning_effort",
        "prompt_cache_key",
        "speed",
        *NON_KEYING_PARAMS,
    )
    params: dict[str, JSON] = {key: body[key] for key in keys if body.get(key) is not None}
    output_config = body.get("output_config")
    if isinstance(output_config, dict):
        if output_config.get("effort") is not None:
            params["effort"] = output_config["effort"]
        if output_config.get("format") is not None:
            params["output_format"] = output_config["format"]
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(t, dict) and str(t.get("type", "")).startswith("web_search") for t in tools
    ):
        params["web_search"] = True
    return params


def images_present(units: Units) -> bool:
    """Whether the request carries an image, at the top level of a message or inside a tool result.

    "Images present" keys the messages cache (prompt-caching guide, "What invalidates the cache",
    checked 2026-12-03: "Adding/removing images anywhere in the prompt"), and a tool result may hold
    image blocks in its ``content`` (tool-use docs, "tool_result ... content ... image blocks"):
    Claude Code returns screenshots that way. :meth:`Units.finish` notes those tool results.
    """
    return "image" in units.kinds or bool(units.pictured)


def citations_enabled(raws: list[JSON], kinds: list[str]) -> bool:
    """Whether a document block turns citations on, which re-keys Anthropic's system and messages caches."""
    return any(
        kind == "document"
        and isinstance(raw, dict)
        and isinstance(raw.get("citations"), dict)
        and bool(raw["citations"].get("enabled"))
        for raw, kind in zip(raws, kinds, strict=True)
    )


def keying_params(params: Mapping[str, JSON], model: str) -> dict[str, JSON]:
    """The parameters that key the cache: the settings of :data:`NON_KEYING_PARAMS` left out, and an
    effort equal to the model's default dropped. The guide (checked 2026-12-03): "Setting effort
    explicitly to the model's default is equivalent to omitting it and does not invalidate"; the
    default is ``high``, ``medium`` on Claude Opus 5.5 (effort docs)."""
    keyed = {key: value for key, value in params.items() if key not in NON_KEYING_PARAMS}
    default = _default_effort(model)
    if default is not None and keyed.get("effort") == default:
        del keyed["effort"]
    return keyed


def _default_effort(model: str) -> str | None:
    name = model.lower()
    if "claude" not in name:
        return None
    return "medium" if "opus-5-5" in name else "high"


ANTHROPIC_TIER_PARAMS: Mapping[str, Tier] = {
    # Anthropic's prompt-caching guide, "What invalidates the cache" (read 2026-12-02,
    # https://platform.claude.com/docs/en/build-with-claude/prompt-caching): toggling web search or
    # citations invalidates the system and messages caches; changing tool_choice, images present or
    # the thinking parameters invalidates the messages cache only. Tools survive all of them.
    # Checked again 2026-12-03: fast mode's speed "invalidates system and message caches", and
    # output_config.format "will invalidate any prompt cache for that conversation thread", so it
    # keys the whole prompt (it is left out here and joins the header).
    "web_search": "system",
    "citations": "system",
    "speed": "system",
    "tool_choice": "messages",
    "images": "messages",
    "thinking": "messages",
    "effort": "messages",
}


def scoped_params(
    provider: str, params: Mapping[str, JSON]
) -> tuple[dict[str, JSON], dict[Tier, dict[str, JSON]]]:
    """Split cache-keying parameters into those that re-key the whole prompt and those that re-key
    only a tier and what follows it. Automatic caches (OpenAI and others) key on all of them at once."""
    if provider != "anthropic":
        return dict(params), {}
    header: dict[str, JSON] = {}
    tiers: dict[Tier, dict[str, JSON]] = {}
    for key, value in params.items():
        tier = ANTHROPIC_TIER_PARAMS.get(key)
        if tier is None:
            header[key] = value
        else:
            tiers.setdefault(tier, {})[key] = value
    return header, tiers


def tier_mixes(tiers: list[Tier], tier_params: Mapping[Tier, Mapping[str, JSON]]) -> list[tuple[int, bytes]]:
    """Where the tier-scoped parameters join the chain: before the first unit of their tier or a later
    one, so a parameter that re-keys the messages leaves the tools' and system's prefix hashes alone."""
    mixes: dict[int, bytes] = {}
    for tier in TIERS[1:]:
        params = tier_params.get(tier)
        position = tier_start(tiers, tier)
        if params and position < len(tiers):
            mixes[position] = mixes.get(position, b"") + digest(canonical_bytes(dict(params)))
    return sorted(mixes.items())
