"""One what-if world: the session's requests as one combination of levers sends them, replayed by
the provider's cache rules with a cache state of its own.

Every world is fed the same requests in start order (a :class:`Step` each, rendered once for all
of them); it applies its levers (:mod:`projections.cache.whatif.levers`, then the stable prefix of
:mod:`projections.cache.whatif.stable_prefix`), asks the analysis's own predictor
(:class:`~projections.cache.predict.prediction.CachePredictor`) what the request reads and writes, and adds
the request's buckets to its :class:`~projections.cache.whatif.tally.Tally`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from projections.cache.predict.cache_models import CacheFacts, CallInput, Prediction
from projections.cache.predict.prediction import CachePredictor
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import render_request
from projections.cache.whatif.attribution import without_attribution
from projections.cache.whatif.levers import (
    Lever,
    with_cache_key,
    with_extended_retention,
    with_rolling_breakpoints,
    with_ttl_1h,
)
from projections.cache.whatif.stable_prefix import Placed, place
from projections.cache.whatif.tally import Tally
from projections.money import Tokens
from projections.normalized import JSON, RequestRecord

KEPT_REQUESTS = 16
"""Requests a world keeps as it sent them besides each lineage's latest: enough for the request a
fork or a retry continues, a few back. An older parent counts as none (the request is sent as it
was recorded), which only makes the stable prefix keep less."""

BODY_LEVERS: frozenset[Lever] = frozenset({"no-attribution-block", "stable-cache-key"})
"""The levers that change the bytes sent, so the request is rendered again."""


@dataclass(slots=True)
class Step:
    """One request as every world takes it: the record (with its body when it was logged), its
    rendering as sent, its model's cache facts and the earlier request it continues."""

    record: RequestRecord
    rendered: RenderedRequest
    facts: CacheFacts
    lineage: str
    parent: str | None
    cache_key: str | None = None
    """The ``prompt_cache_key`` the stable-cache-key lever sends; ``None``: the lever changes nothing."""
    _bodies: dict[frozenset[Lever], RenderedRequest | None] = field(default_factory=dict)
    _rolled: tuple[RenderedRequest | None] | None = None

    def rolled(self) -> RenderedRequest | None:
        """The request as sent with the rolling breakpoints; ``None`` when they change nothing (or
        its provider has no breakpoints). Made once, whichever tracks ask."""
        if self._rolled is None:
            changes = self.facts.scheme == "anthropic-breakpoints"
            self._rolled = (with_rolling_breakpoints(self.rendered) if changes else None,)
        return self._rolled[0]

    def resent(self, levers: frozenset[Lever]) -> RenderedRequest | None:
        """The request rendered again with the body levers of ``levers`` pulled; ``None`` when they
        leave its bytes as sent. Made once per combination, whichever worlds ask."""
        wanted = levers & BODY_LEVERS
        if not wanted or self.record.body is None:
            return None
        if wanted not in self._bodies:
            self._bodies[wanted] = self._render(wanted)
        return self._bodies[wanted]

    def _render(self, levers: frozenset[Lever]) -> RenderedRequest | None:
        body: Mapping[str, JSON] | None = self.record.body
        assert body is not None
        changed = False
        if "no-attribution-block" in levers:
            stripped = without_attribution(body)
            if stripped is not None:
                body, changed = stripped, True
        if "stable-cache-key" in levers and self.cache_key is not None and self.facts.family == "openai":
            keyed = with_cache_key(body, self.cache_key)
            if keyed is not None:
                body, changed = keyed, True
        if not changed:
            return None
        record = self.record
        return render_request(record.provider, record.api, body, usage=record.usage)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one world predicts for one request."""

    tokens: Tokens
    touched: bool
    """Whether the world sent anything other than the request as recorded."""
    prediction: Prediction


class Track:
    """The requests as one combination of levers sends them, lifetimes aside: what every world
    pulling those levers (with or without the 1-hour TTL) sends, worked out once per request.

    A lifetime changes neither the bytes nor where the stable prefix keeps them, so the worlds that
    differ only in ``ttl-1h`` share a track; each applies its lifetimes to what the track sends.
    """

    def __init__(self, levers: frozenset[Lever]) -> None:
        self.levers = levers - {"ttl-1h"}
        self._step: Step | None = None
        self._sent: tuple[RenderedRequest, bool] | None = None
        self._recent: OrderedDict[str, Placed] = OrderedDict()
        self._latest: dict[str, tuple[str, Placed]] = {}
        """Each lineage's latest request (its key and where it was put), kept whatever came since."""
        self._latest_by_key: dict[str, Placed] = {}

    def send(self, step: Step) -> tuple[RenderedRequest, bool]:
        """``step``'s request as the track's levers send it, and whether they changed it."""
        if step is not self._step or self._sent is None:
            self._step = step
            self._sent = self._send(step)
        return self._sent

    def _send(self, step: Step) -> tuple[RenderedRequest, bool]:
        levers, scheme = self.levers, step.facts.scheme
        rendered, touched = step.rendered, False
        resent = step.resent(levers)
        if resent is not None:
            rendered, touched = resent, True
        if "extended-retention" in levers:
            longer = with_extended_retention(rendered, scheme, step.record.platform)
            if longer is not None:
                rendered, touched = longer, True
        if "rolling-breakpoint" in levers and scheme == "anthropic-breakpoints":
            rolled = step.rolled() if rendered is step.rendered else with_rolling_breakpoints(rendered)
            if rolled is not None:
                rendered, touched = rolled, True
        if "stable-prefix" not in levers:
            return rendered, touched
        placed = place(rendered, self._placed(step.parent), step.facts)
        self._keep(step, placed)
        return placed.rendered, touched or placed.moved

    def take_history(self, leader: Track) -> None:
        """Go on from where ``leader`` is, once: a track that sent nothing yet because its worlds
        replayed as the leader's (its one lever more had changed nothing) takes the leader's
        placements when that lever first changes a request. Its other world forking at the same
        request finds the history taken already."""
        if self._step is not None:
            return
        self._recent = OrderedDict(leader._recent)
        self._latest = dict(leader._latest)
        self._latest_by_key = dict(leader._latest_by_key)

    def _placed(self, key: str | None) -> Placed | None:
        if key is None:
            return None
        return self._recent.get(key) or self._latest_by_key.get(key)

    def _keep(self, step: Step, placed: Placed) -> None:
        key = step.record.key
        self._recent[key] = placed
        if len(self._recent) > KEPT_REQUESTS:
            self._recent.popitem(last=False)
        older = self._latest.get(step.lineage)
        if older is not None:
            self._latest_by_key.pop(older[0], None)
        self._latest[step.lineage] = (key, placed)
        self._latest_by_key[key] = placed


class World:
    """The requests as ``levers`` send them, replayed with one cache state (see the module).

    ``track``: what the levers send, shared with the worlds that differ only in ``ttl-1h``.
    ``labels``: whether the predictor names each miss (the as-recorded world does, so each
    request's saving can be put down to the cause of its recorded miss).
    """

    def __init__(self, levers: frozenset[Lever], track: Track | None = None, *, labels: bool = False) -> None:
        self.levers = levers
        self.tally = Tally()
        self._track = track if track is not None else Track(levers)
        self._one_hour = "ttl-1h" in levers
        self._predictor = CachePredictor(labels=labels)
        self._labels = labels
        self._calls: OrderedDict[str, CallInput] = OrderedDict()
        """With labels, the calls a later request may be judged against."""
        self._leader: World | None = None
        self._last: tuple[Step, Outcome] | None = None

    def follow(self, leader: World) -> None:
        """Replay as ``leader`` does, whose levers are this world's but ``rolling-breakpoint``,
        while that lever changes nothing (a client that puts its breakpoints where the lever would
        gets the leader's figures, worked out once); at the first request it changes, take the
        leader's cache state and go on alone.

        The state taken must be the leader's before that request, so a follower is handed each
        request before its leader (:attr:`following` sorts it first): while it follows it has the
        leader replay the request, and the leader, handed it next, answers from what it did."""
        assert self.levers - leader.levers == {"rolling-breakpoint"}
        assert not self.levers & (BODY_LEVERS | {"extended-retention"})  # those change what it rolls
        self._leader = leader

    @property
    def following(self) -> bool:
        """Whether this world still replays as its leader (see :meth:`follow`)."""
        return self._leader is not None

    def replay(self, step: Step) -> Outcome:
        """Send ``step``'s request as this world does and predict what it reads and writes; asked
        again for the same request, what it did."""
        if self._last is not None and self._last[0] is step:
            return self._last[1]
        leader = self._leader
        if leader is not None:
            if step.rolled() is None:
                self._last = (step, leader.replay(step))
                return self._last[1]
            # The leader has not sent this request yet: followers are handed each one first.
            assert leader._last is None or leader._last[0] is not step
            self._predictor = leader._predictor.copy()
            self._track.take_history(leader._track)
            self._leader = None
        outcome = self._replay(step)
        self._last = (step, outcome)
        return outcome

    def _replay(self, step: Step) -> Outcome:
        sent, touched = self._track.send(step)
        if self._one_hour and step.facts.scheme == "anthropic-breakpoints":
            longer = with_ttl_1h(sent)
            if longer is not None:
                sent, touched = longer, True
        record = step.record
        reported = record.usage.cache_read if self._labels and record.usage is not None else None
        call = CallInput(
            record.key,
            sent,
            record.platform,
            step.lineage,
            record.started_at,
            record.first_token_at,
            reported,
        )
        if self._labels:
            before = self._calls.get(step.parent) if step.parent is not None else None
            if before is not None:
                # Judged against the request it continues, as the analysis judges it.
                self._predictor.previous[step.lineage] = before
            self._calls[record.key] = call
            if len(self._calls) > KEPT_REQUESTS:
                self._calls.popitem(last=False)
        prediction = self._predictor.predict(call)
        return Outcome(buckets(prediction, sent, record), touched, prediction)


def buckets(prediction: Prediction, sent: RenderedRequest, record: RequestRecord) -> Tokens:
    """The request's usage as a world predicts it: the predicted read and writes, the rest of its
    prompt uncached, its output as reported (no scenario changes the answer)."""
    usage = record.usage
    output = (usage.output or 0) if usage is not None else 0
    read = prediction.read
    uncached = max(0, sent.total_tokens - read - prediction.write_5m - prediction.write_1h)
    return Tokens(uncached, read, prediction.write_5m, prediction.write_1h, output)
