"""What-if of one session: every scenario asked for, replayed in one pass and priced.

:func:`whatif_session` takes a session's requests (with their bodies, or a
:class:`~projections.cache.whatif.replay.ReplayBodies` that rebuilds them), its boundary events
and the price table, and gives one :class:`~projections.cache.whatif.results.ScenarioResult` per
scenario asked for, ``as-recorded`` first. A session with bodies is replayed from them; one
without any (a transcript) by the transcript rule, which supports fewer scenarios and says why.

``best`` is the cheapest of every combination of the supported scenarios, the recorded requests
(no change) among them, so it is never dearer than any single one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from itertools import combinations

from projections.cache.session_analysis import start_order
from projections.cache.whatif.attribution import without_attribution
from projections.cache.whatif.levers import LEVERS, Lever
from projections.cache.whatif.replay import CarriedBodies, ReplayBodies, replay_bodies
from projections.cache.whatif.results import ScenarioResult, priced
from projections.cache.whatif.scenarios import (
    AS_RECORDED,
    BEST,
    COMPOSABLE,
    SCENARIOS,
    Scenario,
    SessionFacts,
    scenario_named,
)
from projections.cache.whatif.tally import Tally, UnpricedModelError
from projections.cache.whatif.transcript_replay import replay_transcript
from projections.cache.whatif.world import BODY_LEVERS, Track, World
from projections.money import Price, price_match
from projections.normalized import EventRecord, RequestRecord
from projections.providers.mechanics import Scheme
from projections.providers.rules import model_rule


class NoRequestsError(ValueError):
    """A session with no request the provider reported usage for: nothing to replay."""


@dataclass(frozen=True, slots=True)
class WhatIf:
    """Every scenario asked for over one session, ``as-recorded`` first."""

    results: tuple[ScenarioResult, ...]
    facts: SessionFacts
    worlds: int = 1
    """How many combinations of levers were replayed (``best`` needs every supported one)."""

    def result(self, name: str) -> ScenarioResult:
        """The result of scenario ``name``; raises ``KeyError`` for a scenario not asked for."""
        for result in self.results:
            if result.scenario == name:
                return result
        raise KeyError(name)

    def to_json(self) -> list[dict[str, object]]:
        """One object per scenario (see :meth:`ScenarioResult.to_json`)."""
        return [result.to_json() for result in self.results]

    def request_tokens(self) -> dict[str, dict[str, list[int]]]:
        """Each request's usage by scenario, as plain JSON: ``{scenario: {request key: [uncached,
        read, 5-minute write, 1-hour write, output]}}``. ``as-recorded`` lists every replayed
        request; another supported scenario only those it sends otherwise, so a session whose
        fixes touch few requests keeps few figures. Unsupported scenarios are left out."""
        recorded = self.result(AS_RECORDED).by_request if self.has(AS_RECORDED) else {}
        out: dict[str, dict[str, list[int]]] = {AS_RECORDED: {key: list(t) for key, t in recorded.items()}}
        for result in self.results:
            if result.scenario == AS_RECORDED or not result.supported:
                continue
            out[result.scenario] = {
                key: list(tokens) for key, tokens in result.by_request.items() if recorded.get(key) != tokens
            }
        return out

    def has(self, name: str) -> bool:
        """Whether scenario ``name`` was asked for."""
        return any(result.scenario == name for result in self.results)


def whatif_session(
    records: Sequence[RequestRecord],
    events: Sequence[EventRecord] = (),
    *,
    prices: Sequence[Price],
    scenarios: Iterable[str] | None = None,
    bodies: ReplayBodies | None = None,
    parents: Mapping[str, str | None] | None = None,
) -> WhatIf:
    """Replay a session under each scenario named (default: all) and price it at ``prices``.

    ``events``: the session's compactions and head rewrites, which the transcript rule needs.
    ``bodies``: where the bodies are when the records do not carry them. ``parents``: the request
    each one continues, as a stored analysis decided; else decided from the bodies.
    Raises :class:`~projections.cache.whatif.scenarios.UnknownScenarioError`,
    :class:`NoRequestsError` and :class:`~projections.cache.whatif.tally.UnpricedModelError`
    naming what is wrong, before anything is replayed.
    """
    wanted = _wanted(scenarios)
    ordered = sorted(
        (r for r in records if r.usage is not None and r.usage.prompt_total is not None), key=start_order
    )
    if not ordered:
        raise NoRequestsError("the session has no request with reported usage: nothing to replay")
    price_list = list(prices)
    unpriced = sorted(
        m for m in {r.model for r in ordered} if price_match(model=m, prices=price_list) is None
    )
    if unpriced:
        raise UnpricedModelError(unpriced)
    source = bodies if bodies is not None else CarriedBodies()
    with_body = [r for r in ordered if source.has_body(r)]
    if with_body:
        return _from_bodies(ordered, with_body, source, parents, wanted, price_list)
    return _from_transcript(ordered, events, wanted, price_list)


FOLLOW_BLOCKERS: frozenset[Lever] = BODY_LEVERS | {"extended-retention"}
"""Levers that change the request before the rolling breakpoints are placed on it: a world pulling
one replays on its own rather than following the world without ``rolling-breakpoint``."""


def _wanted(names: Iterable[str] | None) -> list[Scenario]:
    if names is None:
        return list(SCENARIOS)
    asked = {scenario_named(name).name for name in names}
    # As recorded comes first whatever was asked: every saving is measured from it.
    return [scenario for scenario in SCENARIOS if scenario.name in asked or scenario.name == AS_RECORDED]


def _from_bodies(
    ordered: list[RequestRecord],
    with_body: list[RequestRecord],
    bodies: ReplayBodies,
    parents: Mapping[str, str | None] | None,
    wanted: list[Scenario],
    prices: list[Price],
) -> WhatIf:
    candidates = _candidates(with_body)
    tracks: dict[frozenset[Lever], Track] = {}
    worlds: dict[frozenset[Lever], World] = {}
    for levers in sorted(_worlds_needed(wanted, candidates), key=len):
        shared = levers - {"ttl-1h"}
        if shared not in tracks:
            tracks[shared] = Track(shared)
        worlds[levers] = World(levers, tracks[shared])
        leader = worlds.get(levers - {"rolling-breakpoint"})
        if leader is not None and leader is not worlds[levers] and not levers & FOLLOW_BLOCKERS:
            worlds[levers].follow(leader)
    recorded = World(frozenset(), labels=True)
    reported = Tally()
    # Followers first: each must fork from its leader's state before the leader sends a request.
    in_order = sorted(worlds.values(), key=lambda world: not world.following)
    body = replay_bodies(ordered, bodies, recorded, in_order, reported, parents=parents)
    facts = SessionFacts(requests=len(ordered), body=body)
    tallies = {levers: world.tally for levers, world in worlds.items()}
    tallies[frozenset()] = recorded.tally
    return replace(_results(wanted, facts, tallies, reported, prices), worlds=len(tallies))


def _from_transcript(
    ordered: list[RequestRecord], events: Sequence[EventRecord], wanted: list[Scenario], prices: list[Price]
) -> WhatIf:
    anthropic = sum(1 for r in ordered if _scheme(r) == "anthropic-breakpoints")
    recorded, reported = Tally(), Tally()
    ttl_1h = Tally() if anthropic else None
    replay_transcript(ordered, events, recorded, reported, ttl_1h)
    facts = SessionFacts(requests=len(ordered), body=None, anthropic_calls=anthropic)
    tallies: dict[frozenset[Lever], Tally] = {frozenset(): recorded}
    if ttl_1h is not None:
        tallies[frozenset({"ttl-1h"})] = ttl_1h
    return replace(_results(wanted, facts, tallies, reported, prices), worlds=len(tallies))


def _results(
    wanted: list[Scenario],
    facts: SessionFacts,
    tallies: Mapping[frozenset[Lever], Tally],
    reported: Tally,
    prices: list[Price],
) -> WhatIf:
    recorded = tallies[frozenset()]
    supported = {lever for s in COMPOSABLE if s.support(facts).supported for lever in s.levers}
    results: list[ScenarioResult] = []
    for scenario in wanted:
        if scenario.name == BEST:
            results.append(_best(scenario, facts, tallies, supported, prices))
            continue
        support = scenario.support(facts)
        tally = tallies.get(scenario.levers)
        ok = support.supported and tally is not None
        result = priced(
            scenario.name,
            tally if tally is not None else recorded,
            recorded,
            prices,
            supported=ok,
            reason=support.reason,
            change=scenario.change,
        )
        if scenario.name == AS_RECORDED:
            reported_cost = reported.cost(prices)
            result = _with_reported(result, reported, reported_cost)
        results.append(result)
    return WhatIf(tuple(results), facts)


def _with_reported(result: ScenarioResult, reported: Tally, cost: Decimal) -> ScenarioResult:
    return replace(result, reported_tokens=reported.tokens(), reported_cost=cost)


def _best(
    scenario: Scenario,
    facts: SessionFacts,
    tallies: Mapping[frozenset[Lever], Tally],
    supported: set[Lever],
    prices: list[Price],
) -> ScenarioResult:
    recorded = tallies[frozenset()]
    options = [levers for levers in tallies if levers <= supported]
    if len(options) < 2:
        support = scenario.support(facts)
        return priced(BEST, recorded, recorded, prices, supported=False, reason=support.reason, change="")
    costs = {levers: tallies[levers].cost(prices) for levers in options}
    order = {lever: i for i, lever in enumerate(LEVERS)}
    cheapest = min(options, key=lambda ls: (costs[ls], len(ls), sorted(order[lever] for lever in ls)))
    names = tuple(s.name for s in COMPOSABLE if s.levers <= cheapest)
    tried = len(options) - 1
    if not cheapest:
        reason = f"none of the {tried} supported combinations costs less than the requests as recorded"
        change = "Nothing to change: the requests as recorded cost least."
    else:
        reason = f"the cheapest of {tried} supported combinations of " + ", ".join(
            s.name for s in COMPOSABLE if s.levers <= supported
        )
        change = " ".join(s.change for s in COMPOSABLE if s.levers <= cheapest)
    return priced(
        BEST,
        tallies[cheapest],
        recorded,
        prices,
        supported=True,
        reason=reason,
        change=change,
        combination=names,
    )


def _candidates(with_body: Sequence[RequestRecord]) -> set[Lever]:
    """The levers that may change some request of the session, known before the replay from each
    request's model: the others cannot be supported, so no world is spent on them."""
    schemes = {_scheme(record) for record in with_body}
    levers: set[Lever] = {"stable-prefix"}
    if "anthropic-breakpoints" in schemes:
        levers |= {"ttl-1h", "rolling-breakpoint"}
        if any(_may_carry_attribution(r) for r in with_body):
            levers.add("no-attribution-block")
    if schemes & {"openai-prefix", "openai-breakpoints"}:
        levers |= {"stable-cache-key", "extended-retention"}
    return levers


def _worlds_needed(wanted: list[Scenario], candidates: set[Lever]) -> set[frozenset[Lever]]:
    """One world per single scenario asked for; for ``best``, one per combination of candidates."""
    needed = {s.levers for s in wanted if s.levers and s.levers <= candidates}
    if any(s.name == BEST for s in wanted):
        pool = sorted(candidates, key=LEVERS.index)
        for size in range(1, len(pool) + 1):
            needed.update(frozenset(c) for c in combinations(pool, size))
    return needed


def _scheme(record: RequestRecord) -> Scheme | None:
    return _rule_scheme(record.platform, record.model)


@lru_cache(maxsize=256)
def _rule_scheme(platform: str, model: str) -> Scheme | None:
    rule = model_rule(platform, model)
    return rule.scheme if rule is not None else None


def _may_carry_attribution(record: RequestRecord) -> bool:
    """Whether the request may open its system prompt with Claude Code's attribution block: a body
    at hand says so; without it, only a Claude Code release before 2.1.36 rules it out."""
    if record.body is not None:
        return without_attribution(record.body) is not None
    client, _, version = record.client_version.partition(" ")
    if client != "claude-code":
        return client == ""
    numbers = tuple(int(part) for part in version.split(".")[:3] if part.isdigit())
    return numbers >= (2, 1, 36)
