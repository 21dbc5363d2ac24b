"""The cache predictor over a request stream: each request judged by its provider's scheme (DESIGN §7).

Requests are walked in start order with one cache state, so an entry one request writes is there for
the next; the facts of each request come from the provider rules in force on its day.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from datetime import date, datetime

from projections.cache.predict.anthropic import predict_anthropic
from projections.cache.predict.automatic import (
    predict_automatic,
    predict_openai_breakpoints,
    predict_units,
)
from projections.cache.predict.cache_models import CacheState, CallInput, Prediction, cache_facts


class CachePredictor:
    """Walks requests in start order with one cache state shared by every lineage.

    Lineages share the provider's cache (a subagent can read the main chain's tools and system
    prompt), but each request is compared with the previous request of its own lineage.
    """

    def __init__(self, state: CacheState | None = None, *, labels: bool = True) -> None:
        self.state = state if state is not None else CacheState()
        self.previous: dict[str, CallInput] = {}
        self.labels = labels
        """Whether Anthropic predictions name their miss label (a what-if replay needs only figures)."""

    def copy(self) -> CachePredictor:
        """A predictor in this one's state that goes on alone: a what-if world that replayed as
        another until its own lever first changed a request takes that world's state then."""
        twin = CachePredictor(deepcopy(self.state), labels=self.labels)
        twin.previous = dict(self.previous)
        return twin

    def expired_hashes(self, now: datetime | None) -> set[str]:
        """Prefix hashes of entries that have expired by ``now``."""
        if now is None:
            return set()
        moment = now.timestamp()
        return {
            key
            for key, entry in self.state.entries.items()
            if entry.expires_at is not None and entry.expires_at <= moment
        }

    def predict(self, call: CallInput) -> Prediction:
        """Predict one request and update the cache state with what it reads and writes."""
        facts = cache_facts(call.platform, call.rendered.model, _day(call.started_at))
        prev = self.previous.get(call.lineage)
        if facts.scheme == "anthropic-breakpoints":
            prediction = predict_anthropic(self.state, call, prev, facts, labels=self.labels)
        elif facts.scheme == "openai-breakpoints":
            prediction = predict_openai_breakpoints(self.state, call, prev, facts)
        elif facts.scheme == "deepseek-units":
            prediction = predict_units(self.state, call, prev, facts)
        else:
            prediction = predict_automatic(self.state, call, prev, facts)
        self.previous[call.lineage] = call
        return prediction


def predict_calls(calls: Sequence[CallInput], state: CacheState | None = None) -> list[Prediction]:
    """Predict every request in the order given (by start time) with one shared cache state."""
    predictor = CachePredictor(state)
    return [predictor.predict(call) for call in calls]


def _day(moment: datetime | None) -> date | None:
    return moment.date() if moment is not None else None
