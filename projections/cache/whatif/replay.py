"""The replay of a session whose requests were logged with their bodies: every world in lockstep.

Each request is rebuilt and rendered once, handed to every world as a
:class:`~projections.cache.whatif.world.Step`, and let go, so a long session is replayed in flat
memory whatever the number of worlds. Lineages are decided from the bodies as the analysis decides
them (:class:`~projections.cache.predict.lineage.LineageAssigner`), or taken from a stored analysis.
A request whose body is missing or cannot be rebuilt, or whose model the provider rules do not
know, counts in every world as the provider reported it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from projections.cache.predict.cache_models import CacheFacts, UnknownModelError, cache_facts
from projections.cache.predict.lineage import LineageAssigner
from projections.cache.render.rebuild import StoredRequestError
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import Renderer
from projections.cache.whatif.attribution import has_attribution_block
from projections.cache.whatif.tally import GroupKey, Tally
from projections.cache.whatif.world import Step, World
from projections.money import Tokens
from projections.normalized import JSON, RequestRecord, Usage
from projections.providers.mechanics import Scheme

STABLE_CACHE_KEY = "cachescope-whatif-session"
"""The ``prompt_cache_key`` the stable-cache-key scenario sends on every request of a session: any
one value does, as long as it never changes."""


class ReplayBodies(Protocol):
    """Where the replay finds each request's body (a log file's records carry them; a store rebuilds
    them from its blocks)."""

    def has_body(self, record: RequestRecord) -> bool:
        """Whether ``record`` was logged with its body."""
        ...

    def rebuild(self, record: RequestRecord) -> tuple[RequestRecord, RenderedRequest]:
        """``record`` with its body, and that body rendered with its usage; raises
        :class:`~projections.cache.render.rebuild.StoredRequestError` when it cannot be rebuilt."""
        ...


class CarriedBodies:
    """The bodies the records carry, rendered in the order they are asked for."""

    def __init__(self) -> None:
        self._renderer = Renderer()

    def has_body(self, record: RequestRecord) -> bool:
        """Whether the record carries its body."""
        return record.body is not None

    def rebuild(self, record: RequestRecord) -> tuple[RequestRecord, RenderedRequest]:
        """The record as it is, and its body rendered with its usage."""
        assert record.body is not None
        return record, self._renderer.render(record.provider, record.api, record.body, usage=record.usage)


@dataclass(slots=True)
class BodyFacts:
    """What the replay saw of the session, which decides the scenarios it supports."""

    with_body: int = 0
    """Requests replayed from their bodies."""
    schemes: Counter[Scheme] = field(default_factory=Counter)
    """Of those, how many each caching scheme serves."""
    attribution_blocks: int = 0
    """Of those, how many open their system prompt with Claude Code's attribution block."""
    cache_keys: set[str] = field(default_factory=set)
    """The ``prompt_cache_key`` values the OpenAI requests sent (``""``: none)."""
    retention: Counter[str] = field(default_factory=Counter)
    """The OpenAI requests by the retention they asked for (``""``: the default)."""


def reported_tokens(usage: Usage | None) -> Tokens:
    """A request's usage as the provider reported it, an unreported bucket as 0."""
    if usage is None:
        return Tokens()
    return Tokens(
        usage.uncached_input or 0,
        usage.cache_read or 0,
        usage.cache_write_5m or 0,
        usage.cache_write_1h or 0,
        usage.output or 0,
    )


def cause_of(label: str | None) -> str:
    """The cause a request's saving is put down to: its recorded miss label up to the position
    (``prefix-changed@system:3`` is ``prefix-changed@system``); empty for no miss."""
    return (label or "").split(":", 1)[0]


def replay_bodies(
    ordered: Sequence[RequestRecord],
    bodies: ReplayBodies,
    recorded: World,
    worlds: Iterable[World],
    reported: Tally,
    *,
    parents: Mapping[str, str | None] | None = None,
) -> BodyFacts:
    """Replay ``ordered`` (start order, requests with usage) in ``recorded`` and every world of
    ``worlds``; the provider's own usage goes to ``reported``. ``parents``: the request each one
    continues, by key, as a stored analysis decided (else decided here from the bodies)."""
    others = list(worlds)
    facts = BodyFacts()
    assigner = LineageAssigner() if parents is None else None
    lineage_of: dict[str, str] = {}
    for record in ordered:
        key = GroupKey(record.model, record.client_version, "")
        reported.add(key, reported_tokens(record.usage), touched=False, request=record.key)
        step = _step(record, bodies, assigner, parents, lineage_of)
        if step is None:
            for world in (recorded, *others):
                world.tally.add(key, reported_tokens(record.usage), touched=False, request=record.key)
            continue
        _note(facts, step)
        outcome = recorded.replay(step)
        key = key._replace(cause=cause_of(outcome.prediction.label))
        recorded.tally.add(key, outcome.tokens, touched=False, request=record.key)
        for world in others:
            result = world.replay(step)
            world.tally.add(key, result.tokens, touched=result.touched, request=record.key)
    return facts


def _step(
    record: RequestRecord,
    bodies: ReplayBodies,
    assigner: LineageAssigner | None,
    parents: Mapping[str, str | None] | None,
    lineage_of: dict[str, str],
) -> Step | None:
    """The request as the worlds take it; ``None`` when it can only count as reported."""
    if not bodies.has_body(record):
        return None
    try:
        rebuilt, rendered = bodies.rebuild(record)
        facts = _facts(record)
    except (StoredRequestError, UnknownModelError):
        return None
    if assigner is not None:
        chain, parent = assigner.add(record, rendered)
        lineage = str(chain)
    else:
        assert parents is not None
        parent = parents.get(record.key)
        lineage = lineage_of.get(parent, record.key) if parent is not None else record.key
    lineage_of[record.key] = lineage
    return Step(rebuilt, rendered, facts, lineage, parent, cache_key=STABLE_CACHE_KEY)


def _facts(record: RequestRecord) -> CacheFacts:
    day = record.started_at.date() if record.started_at is not None else None
    return cache_facts(record.platform, record.model, day)


def _note(facts: BodyFacts, step: Step) -> None:
    facts.with_body += 1
    facts.schemes[step.facts.scheme] += 1
    rendered = step.rendered
    if step.facts.family == "anthropic" and has_attribution_block(rendered):
        facts.attribution_blocks += 1
    if step.facts.family == "openai":
        facts.cache_keys.add(_text(rendered.params.get("prompt_cache_key")))
        facts.retention[_text(rendered.params.get("prompt_cache_retention"))] += 1


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else ""
