"""One text sent in two forms: a plain-string ``content`` in one request, the same text as a list of
one text block in the next (DESIGN §6.2's ``reserialized``, told apart because the evidence differs)."""

from __future__ import annotations

from projections.cache.render.rendered_request import RenderedRequest


def string_block_switch(prev: RenderedRequest, cur: RenderedRequest, p: int) -> str | None:
    """What changed at ``p`` when the only change is the form: the same text sent as a plain string
    in one request and as the sole, plain text block of its message (or of the system prompt) in the
    other; ``None`` for any other change.

    Such a switch *may* break the cache; the evidence does not settle it (searched 2026):

    - Anthropic's API reference, Messages, ``messages``
      (https://platform.claude.com/docs/en/api/messages; the same text in its SDKs, e.g.
      anthropics/anthropic-sdk-java ``MessageCreateParams``): "Using a ``string`` for ``content``
      is shorthand for an array of one content block of type ``"text"``. The following input
      messages are equivalent". The two are one input to the model; the reference says so of
      message content, not of ``system``.
    - Anthropic's prompt caching guide
      (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): the cache "references
      the entire prompt - tools, system, and messages (in that order) up to and including the block
      designated with cache_control"; its tool-use page
      (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching):
      "a change at one level invalidates that level and everything after it". Neither says whether
      a change of form alone, the text unchanged, is such a change.
    - Recorded traffic: the 64 claude-trace requests of Claude Code 1.0.6 in badlogic/lemmy @
      bb5d89d (``apps/claude-trace/test/test-traffic.jsonl``; the first 10 are in
      ``shared/data/claude-trace``) never send one message in both forms, and no public issue found
      measures a switch.

    So the cause says "may break" and does not assert it. The prediction still counts the bytes as
    changed, the bound Cachescope can prove; where the provider reports reading past the switch,
    its ``model-error`` warning names the switch as the evidence that it did not break.
    """
    if p >= len(prev) or p >= len(cur) or prev.tiers[p] != cur.tiers[p] or prev.roles[p] != cur.roles[p]:
        return None
    old, new = prev.raws[p], cur.raws[p]
    if isinstance(old, str) and sole_text_block(cur, p) == old:
        forms = "a plain string before and a one-text-block list now"
    elif isinstance(new, str) and sole_text_block(prev, p) == new:
        forms = "a one-text-block list before and a plain string now"
    else:
        return None
    return (
        f"{cur.identity(p)} is the same text, sent as {forms}; Anthropic documents the two forms as "
        "equivalent input but not whether its cache keys them alike, so this may break the cache"
    )


def sole_text_block(rendered: RenderedRequest, p: int) -> str | None:
    """The text of unit ``p`` when it is a text block holding nothing but its text (and a marker),
    alone in its message or, for the system prompt, alone in the system list; else ``None``."""
    raw = rendered.raws[p]
    if not isinstance(raw, dict) or raw.get("type") != "text" or set(raw) - {"type", "text", "cache_control"}:
        return None
    text = raw.get("text")
    if not isinstance(text, str):
        return None
    # A message's units are adjacent, so the unit is alone when neither neighbour shares its place.
    place = (rendered.tiers[p], rendered.message_indexes[p])
    neighbours = [i for i in (p - 1, p + 1) if 0 <= i < len(rendered)]
    if any((rendered.tiers[i], rendered.message_indexes[i]) == place for i in neighbours):
        return None
    return text


def marker_why(status: str, why: str, sublabel: str | None, at: str) -> str:
    """Why a previous request's marker fared as it did; one broken by a first change that is only a
    string ↔ one-text-block switch (cause sublabel ``string-vs-block``, at ``at``) is said to be
    *maybe* broken, as the evidence allows no more (see :func:`string_block_switch`)."""
    if status != "broken" or sublabel != "string-vs-block":
        return why
    return (
        "maybe broken: the first change before it is the same text switched between a plain string "
        f"and a one-text-block list at {at}, which may break the cache"
    )
