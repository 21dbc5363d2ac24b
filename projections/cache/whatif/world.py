"""One what-if world: the session's requests as one combination of levers sends them, replayed by
the provider's cache rules with a cache state of its own.

Every world is fed the same requests in start order (a :class:`Step` each, rendered once for all
of them); it applies its levers (:mod:`projections.cache.whatif.levers`, then the stable prefix of
:mod:`projections.cache.whatif.stable_prefix`), asks the analysis's own predictor
(:class:`~projections.cache.prediction.CachePredictor`) what the request reads and writes, and adds
the request's buckets to its :class:`~projections.cache.whatif.tally.Tally`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from projections.cache.prediction import CachePredictor
from projections.cache.providers import CacheFacts, CallInput, Prediction
from projections.cache.rendered_request import RenderedRequest
from projections.cache.rendering import render_request
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

Kept = tuple[RenderedRequest, Placed, CallInput]
"""A request a world sent: its rendering with the levers pulled, where the stable prefix put it,
and the call the predictor saw."""

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


class World:
    """The requests as ``levers`` send them, replayed with one cache state (see the module).

    ``labels``: whether the predictor names each miss (the as-recorded world does, so each
    request's saving can be put down to the cause of its recorded miss).
    """

    def __init__(self, levers: frozenset[Lever], *, labels: bool = False) -> None:
        self.levers = levers
        self.tally = Tally()
        self._predictor = CachePredictor(labels=labels)
        self._labels = labels
        self._recent: OrderedDict[str, Kept] = OrderedDict()
        self._latest: dict[str, Kept] = {}
        """Each lineage's latest request, by lineage, kept whatever came since."""
        self._latest_by_key: dict[str, Kept] = {}

    def replay(self, step: Step) -> Outcome:
        """Send ``step``'s request as this world does and predict what it reads and writes."""
        rendered, touched = self._levered(step)
        before = self._sent(step.parent)
        placed = None
        if "stable-prefix" in self.levers:
            placed = place(rendered, before[0] if before else None, before[1] if before else None, step.facts)
            touched = touched or placed.moved
        record = step.record
        sent = placed.rendered if placed is not None else rendered
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
        if self._labels and before is not None:
            # Judged against the request it continues, as the analysis judges it.
            self._predictor.previous[step.lineage] = before[2]
        prediction = self._predictor.predict(call)
        self._keep(step, rendered, placed, call)
        return Outcome(buckets(prediction, sent, record), touched, prediction)

    def _levered(self, step: Step) -> tuple[RenderedRequest, bool]:
        """The request with every lever but the stable prefix pulled, and whether any changed it."""
        levers, scheme = self.levers, step.facts.scheme
        rendered = step.rendered
        touched = False
        resent = step.resent(levers)
        if resent is not None:
            rendered, touched = resent, True
        changes: list[Callable[[RenderedRequest], RenderedRequest | None]] = []
        if "extended-retention" in levers:
            changes.append(lambda r: with_extended_retention(r, scheme, step.record.platform))
        if scheme == "anthropic-breakpoints":
            if "rolling-breakpoint" in levers:
                changes.append(with_rolling_breakpoints)
            if "ttl-1h" in levers:
                changes.append(with_ttl_1h)
        for change in changes:
            changed = change(rendered)
            if changed is not None:
                rendered, touched = changed, True
        return rendered, touched

    def _sent(self, key: str | None) -> Kept | None:
        if key is None:
            return None
        return self._recent.get(key) or self._latest_by_key.get(key)

    def _keep(self, step: Step, rendered: RenderedRequest, placed: Placed | None, call: CallInput) -> None:
        key = step.record.key
        kept = (rendered, placed if placed is not None else Placed(rendered, 0, 0, "", -1), call)
        self._recent[key] = kept
        if len(self._recent) > KEPT_REQUESTS:
            self._recent.popitem(last=False)
        older = self._latest.get(step.lineage)
        if older is not None:
            self._latest_by_key.pop(older[2].key, None)
        self._latest[step.lineage] = kept
        self._latest_by_key[key] = kept


def buckets(prediction: Prediction, sent: RenderedRequest, record: RequestRecord) -> Tokens:
    """The request's usage as a world predicts it: the predicted read and writes, the rest of its
    prompt uncached, its output as reported (no scenario changes the answer)."""
    usage = record.usage
    output = (usage.output or 0) if usage is not None else 0
    read = prediction.read
    uncached = max(0, sent.total_tokens - read - prediction.write_5m - prediction.write_1h)
    return Tokens(uncached, read, prediction.write_5m, prediction.write_1h, output)
