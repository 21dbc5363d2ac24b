"""``cacheMetrics``: how well a session's prompt cache worked, and what reset it (DESIGN §5).

- **requests**: provider calls of the main chain that reported usage (``assistant/message`` usage;
  a second report for the same turn and step replaces the first, as in ``tokenUsage``). Compaction
  calls read another prompt and are not counted.
- **hits**: requests that read at least one cached token.
- **hit rate**: read ÷ (uncached + read + writes) over all requests, by the rule of
  :func:`projections.hit_rate.hit_rate`: ``None`` when no request reported cache buckets, since an
  unreported rate is unknown, not zero.
- **resets**: events after which the cached prefix cannot be read back: a compaction (a
  ``compaction/summary``: the surface is rewritten from the checkpoint on), a model change (the
  provider or model of ``request/header`` or ``request/context`` differs from the previous one) and a
  tool change (``request/header`` lists tools that differ from the previous list it sent).
- **write amplification**: cache-write tokens ÷ cache-read tokens: how many tokens were paid to
  write for each token read back. Above 1 the session writes prefixes it does not reuse; ``None``
  while nothing was read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from projections.events import report_key, usage_of
from projections.folds.projection import Projection
from projections.hit_rate import hit_rate
from projections.normalized import JSON, EventRecord

KEY = "cacheMetrics"


@dataclass(frozen=True, slots=True)
class CacheMetrics:
    """Requests, hits and rates, and the count of each kind of cache reset."""

    requests: int
    hits: int
    hit_rate: float | None
    resets_compaction: int
    resets_model: int
    resets_tools: int
    write_amplification: float | None

    def to_json(self) -> JSON:
        """The view as served."""
        return {
            "requests": self.requests,
            "hits": self.hits,
            "hitRate": self.hit_rate,
            "resets": {
                "compaction": self.resets_compaction,
                "model": self.resets_model,
                "tools": self.resets_tools,
            },
            "writeAmplification": self.write_amplification,
        }


class Counted(NamedTuple):
    """One request's contribution, kept for the latest request so a second report can replace it."""

    uncached: int
    read: int
    write: int
    hit: bool
    cache_reported: bool


class CacheMetricsState(NamedTuple):
    """Sums over requests, reset counts, and what the next request is compared with."""

    requests: int
    hits: int
    uncached: int
    read: int
    write: int
    cache_reports: int
    resets_compaction: int
    resets_model: int
    resets_tools: int
    model: str | None
    tools: str | None
    """A fingerprint of the last tool list sent, so the state stays small."""
    last_key: str | None
    last: Counted | None


def tools_fingerprint(tools: JSON) -> str:
    """A short digest of a tool list, independent of key order and whitespace."""
    canonical = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=8).hexdigest()


class CacheMetricsV1(Projection[CacheMetricsState, CacheMetrics]):
    """Requests, hits, hit rate, resets and write amplification."""

    key = KEY
    state_version = 1

    def init(self) -> CacheMetricsState:
        """No request yet."""
        return CacheMetricsState(0, 0, 0, 0, 0, 0, 0, 0, 0, None, None, None, None)

    def apply(self, state: CacheMetricsState, event: EventRecord) -> CacheMetricsState:
        """Count a request, a compaction, or a change of model or tools."""
        kind = event.type
        if kind == "assistant/message":
            return self._count_request(state, event)
        if kind == "compaction/summary":
            return state._replace(resets_compaction=state.resets_compaction + 1)
        if kind == "request/header":
            header = event.data.get("header")
            if not isinstance(header, Mapping):
                return state
            config = header.get("config")
            if isinstance(config, Mapping):
                state = self._see_model(state, config.get("provider"), config.get("model"))
            if "tools" in header:
                state = self._see_tools(state, tools_fingerprint(header["tools"]))
            return state
        if kind == "request/context":
            return self._see_model(state, event.data.get("provider"), event.data.get("model"))
        return state

    def _count_request(self, state: CacheMetricsState, event: EventRecord) -> CacheMetricsState:
        report = usage_of(event)
        if report is None:
            return state
        counted = Counted(
            report.uncached_input,
            report.cache_read,
            report.cache_write,
            report.cache_read > 0,
            report.cache_reported,
        )
        key = report_key(event)
        requests, hits, uncached, read, write, cache_reports = (
            state.requests,
            state.hits,
            state.uncached,
            state.read,
            state.write,
            state.cache_reports,
        )
        last = state.last
        if key == state.last_key and last is not None:
            hits -= last.hit
            uncached -= last.uncached
            read -= last.read
            write -= last.write
            cache_reports -= last.cache_reported
        else:
            requests += 1
        return state._replace(
            requests=requests,
            hits=hits + counted.hit,
            uncached=uncached + counted.uncached,
            read=read + counted.read,
            write=write + counted.write,
            cache_reports=cache_reports + counted.cache_reported,
            last_key=key,
            last=counted,
        )

    def _see_model(self, state: CacheMetricsState, provider: JSON, model: JSON) -> CacheMetricsState:
        if not isinstance(model, str):
            return state
        identity = f"{provider}/{model}"
        if identity == state.model:
            return state
        resets = state.resets_model + (state.model is not None)
        return state._replace(model=identity, resets_model=resets)

    def _see_tools(self, state: CacheMetricsState, fingerprint: str) -> CacheMetricsState:
        if fingerprint == state.tools:
            return state
        resets = state.resets_tools + (state.tools is not None)
        return state._replace(tools=fingerprint, resets_tools=resets)

    def view(self, state: CacheMetricsState) -> CacheMetrics:
        """The figures; rates are ``None`` when what they divide by was not reported."""
        # A request without cache buckets counts them as 0: only "none reported" makes them unknown.
        reported = state.cache_reports > 0
        rate = hit_rate(
            read=state.read if reported else None,
            uncached=state.uncached,
            writes=state.write if reported else None,
        )
        amplification = state.write / state.read if state.read else None
        return CacheMetrics(
            requests=state.requests,
            hits=state.hits,
            hit_rate=rate,
            resets_compaction=state.resets_compaction,
            resets_model=state.resets_model,
            resets_tools=state.resets_tools,
            write_amplification=amplification,
        )

    def view_json(self, view: CacheMetrics) -> JSON:
        """The view as served."""
        return view.to_json()

    def serialize(self, state: CacheMetricsState) -> JSON:
        """Every field of the state; the latest request as a list."""
        value = state._asdict()
        value["last"] = None if state.last is None else list(state.last)
        return value

    def deserialize(self, value: JSON) -> CacheMetricsState:
        """The state :meth:`serialize` wrote."""
        fields = dict(value)
        fields["last"] = None if value["last"] is None else Counted(*value["last"])
        return CacheMetricsState(**fields)
