"""The what-if scenarios: one interface, each documented, each saying whether the data supports it.

A :class:`Scenario` has a ``name``, a ``doc`` (what the replay sends), a ``change`` (the one thing
to do to get its saving), the levers it pulls, :meth:`Scenario.support` (whether the session's data
can price it, and why or why not) and :meth:`Scenario.replay` (its result over one session). The
replay is the same for all of them (:func:`projections.cache.whatif.session.whatif_session`, which
runs several in one pass): the requests sent as the levers say, through the provider's cache rules.
``best`` is the cheapest combination of the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from projections.cache.whatif.attribution import ATTRIBUTION_PREFIX
from projections.cache.whatif.levers import EXTENDED_RETENTION, Lever
from projections.cache.whatif.replay import BodyFacts


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What the data of one session holds, as the scenarios' support rules read it."""

    requests: int
    """Requests with reported usage: those replayed."""
    body: BodyFacts | None
    """What the replay saw of the bodies; ``None`` for a session logged without any (a transcript)."""
    anthropic_calls: int = 0
    """In a transcript, the calls a Claude model answered."""


@dataclass(frozen=True, slots=True)
class Support:
    """Whether a scenario can be priced from a session's data, and the reason either way."""

    supported: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Scenario:
    """One what-if (see the module)."""

    name: str
    doc: str
    change: str
    levers: frozenset[Lever]
    rule: Callable[[SessionFacts], Support]

    def support(self, facts: SessionFacts) -> Support:
        """Whether ``facts`` let this scenario be priced, and why."""
        return self.rule(facts)


class UnknownScenarioError(LookupError):
    """A scenario name no scenario has."""

    def __init__(self, name: str) -> None:
        self.name = name
        known = ", ".join(SCENARIO_NAMES)
        super().__init__(f"unknown scenario {name!r}; the scenarios are: {known}")


_NO_BODIES = "the session was logged without request bodies"


def _anthropic_bodies(facts: SessionFacts) -> int:
    return facts.body.schemes["anthropic-breakpoints"] if facts.body is not None else 0


def _openai_bodies(facts: SessionFacts) -> int:
    if facts.body is None:
        return 0
    return facts.body.schemes["openai-prefix"] + facts.body.schemes["openai-breakpoints"]


def _as_recorded(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(
            True, "the calls' usage replayed by the transcript rule: read(N) = read(N-1) + write(N-1)"
        )
    return Support(
        True, f"{facts.body.with_body} requests replayed from their bodies by the provider's rules"
    )


def _stable_prefix(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(False, f"{_NO_BODIES}: which bytes changed in place is unknown")
    return Support(
        True, "every request's bytes are logged, so each in-place change can be moved after the history"
    )


def _ttl_1h(facts: SessionFacts) -> Support:
    if facts.body is None:
        if facts.anthropic_calls:
            return Support(
                True, "the calls' start times and cached sizes say which entries an hour would keep"
            )
        return Support(False, "no call went to a Claude model, the only one with a 1-hour cache lifetime")
    if _anthropic_bodies(facts):
        return Support(True, "the requests' breakpoints and start times are logged")
    return Support(False, "no request went to a Claude model, the only one with a 1-hour cache lifetime")


def _rolling(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(False, f"{_NO_BODIES}: where the blocks and markers sat is unknown")
    if _anthropic_bodies(facts):
        return Support(True, "every request's blocks are logged, so the markers can be placed on them")
    return Support(False, "no request went to a provider that caches at cache_control breakpoints")


def _no_attribution(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(
            False, f"{_NO_BODIES}: whether the system prompt carried the attribution block is unknown"
        )
    count = facts.body.attribution_blocks
    if not count:
        return Support(
            False,
            f"no request's system prompt opens with {ATTRIBUTION_PREFIX!r} (Claude Code before 2.1.36, "
            "or CLAUDE_CODE_ATTRIBUTION_HEADER=0 already)",
        )
    return Support(True, f"{count} requests open their system prompt with Claude Code's attribution block")


def _stable_key(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(False, f"{_NO_BODIES}: the prompt_cache_key sent is unknown")
    if not _openai_bodies(facts):
        return Support(False, "no request went to an OpenAI model, whose cache routes by prompt_cache_key")
    keys = facts.body.cache_keys
    if len(keys) < 2:
        return Support(False, "every OpenAI request sent the same prompt_cache_key already")
    return Support(True, f"the OpenAI requests sent {len(keys)} different prompt_cache_key values")


def _retention(facts: SessionFacts) -> Support:
    if facts.body is None:
        return Support(False, f"{_NO_BODIES}: the retention asked for is unknown")
    body = facts.body
    offered = sum(body.schemes[scheme] for scheme in EXTENDED_RETENTION)
    if not offered:
        return Support(False, "no request went to a model that offers an extended cache retention")
    asked = sum(count for value, count in body.retention.items() if value in EXTENDED_RETENTION.values())
    if asked >= offered:
        return Support(False, "every request that could ask for the extended retention did")
    return Support(True, f"{offered - asked} OpenAI requests kept the default retention of minutes")


def _best(facts: SessionFacts) -> Support:
    # Decided once the combinations are priced (see whatif_session); this is the rule for none.
    return Support(False, "no scenario other than the recorded one is supported")


AS_RECORDED = "as-recorded"
BEST = "best"

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        AS_RECORDED,
        "The requests as they were sent, replayed by the provider's cache rules. Every saving is "
        "measured from it, so the rules' own error cancels; its error against the reported usage is "
        "shown beside it.",
        "",
        frozenset(),
        _as_recorded,
    ),
    Scenario(
        "stable-prefix",
        "Every in-place change to the prompt (a per-turn line in the system prompt, an edited or "
        "stripped message, reordered tools) appended after the history instead, so each request keeps "
        "its predecessor's prefix through that one's last breakpoint; token totals as recorded.",
        "Keep the prompt's head byte-stable: send what changes per turn after the history, and "
        "append corrections instead of rewriting earlier messages.",
        frozenset({"stable-prefix"}),
        _stable_prefix,
    ),
    Scenario(
        "ttl-1h",
        "The bytes as sent, every breakpoint with the 1-hour lifetime: writes at the 1-hour rate, "
        "entries kept through up to an hour idle.",
        'Ask for ttl "1h" on the cache_control breakpoints of the stable prefix.',
        frozenset({"ttl-1h"}),
        _ttl_1h,
    ),
    Scenario(
        "rolling-breakpoint",
        "The bytes as sent, with breakpoints on the last system block and on the last message (two "
        "of the four allowed), so each request writes its whole prompt for the next to read.",
        "Put a cache_control marker on the last system block and move one to the last message of "
        "every request.",
        frozenset({"rolling-breakpoint"}),
        _rolling,
    ),
    Scenario(
        "no-attribution-block",
        f"The requests without the {ATTRIBUTION_PREFIX!r} block Claude Code 2.1.36 and later put first "
        "in the system prompt: what CLAUDE_CODE_ATTRIBUTION_HEADER=0 saves on an endpoint that keys "
        "its cache on it, and across sessions.",
        "Set CLAUDE_CODE_ATTRIBUTION_HEADER=0 in Claude Code's environment.",
        frozenset({"no-attribution-block"}),
        _no_attribution,
    ),
    Scenario(
        "stable-cache-key",
        "OpenAI's automatic caching with one prompt_cache_key for the whole session, so its requests "
        "share one cache.",
        "Send one prompt_cache_key per session (the conversation's id), never one per request.",
        frozenset({"stable-cache-key"}),
        _stable_key,
    ),
    Scenario(
        "extended-retention",
        "OpenAI's automatic caching with the extended retention where the model offers it "
        '(prompt_cache_retention "24h"), so entries outlive an idle gap of minutes.',
        'Ask for prompt_cache_retention "24h" on the requests of models that offer it.',
        frozenset({"extended-retention"}),
        _retention,
    ),
    Scenario(
        BEST,
        "The cheapest combination of the scenarios above that the data supports.",
        "Make every change of the combination named.",
        frozenset(),
        _best,
    ),
)

SCENARIO_NAMES: Final[tuple[str, ...]] = tuple(scenario.name for scenario in SCENARIOS)
COMPOSABLE: Final[tuple[Scenario, ...]] = tuple(s for s in SCENARIOS if s.levers)
"""The scenarios ``best`` combines."""


def scenario_named(name: str) -> Scenario:
    """The scenario called ``name``; raises :class:`UnknownScenarioError` for any other name."""
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise UnknownScenarioError(name)
