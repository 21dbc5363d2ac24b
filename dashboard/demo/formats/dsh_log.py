"""A dsh session log as the harness writes it, built event by event with its surface kept in step.

The builder knows the surface (the nodes the model sees), prices every node with the harness's
heuristic (:mod:`projections.prices`), meters every compaction and pruning with the exact price of
the range it replaces, and bills each assistant step with :class:`AnthropicCache` over the surface,
so the log's figures agree with its own content.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload

from dashboard.demo.cache_model import (
    ANTHROPIC_MINIMUM,
    AnthropicCache,
    Breakpoint,
    CacheUsage,
    PrefixPoint,
    estimate_tokens,
    extend_key,
)
from dashboard.demo.clock import iso_z
from projections.prices import message_price

Line = dict[str, Any]

HASH_SCHEME = "blake2b-96-chain"


@dataclass(slots=True)
class Node:
    """A surface node: the event's seq, its heuristic price and whether it is a system prompt."""

    seq: int
    price: int
    system: bool
    text: str
    """Canonical JSON of the node's message: its identity in the cache prefix."""


@dataclass(slots=True)
class DshCounts:
    """What the log holds, counted while it is written (the manifest's expectations)."""

    events: int = 0
    requests: int = 0
    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    metered_replacements: int = 0
    compactions: int = 0
    prunes: int = 0
    system_rewrites: int = 0
    unmetered_replacements: int = 0


class _PrefixView(Sequence[PrefixPoint]):
    """The request prefix (static units, then surface nodes) without copying it per request."""

    def __init__(self, static: list[PrefixPoint], nodes: list[PrefixPoint]) -> None:
        self._static = static
        self._nodes = nodes

    def __len__(self) -> int:
        return len(self._static) + len(self._nodes)

    @overload
    def __getitem__(self, index: int) -> PrefixPoint: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[PrefixPoint]: ...
    def __getitem__(self, index: int | slice) -> PrefixPoint | Sequence[PrefixPoint]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        static = len(self._static)
        return self._static[index] if index < static else self._nodes[index - static]


@dataclass(slots=True)
class DshLog:
    """One session log under construction: header, append batches and the live surface."""

    session_id: str
    version: int
    rng: random.Random
    cache: AnthropicCache
    model: str
    time_ms: int
    tools: list[dict[str, Any]]
    system_text: str = ""
    cwd: str = ""
    title: str = ""
    parent: str | None = None
    chunks: bool = True
    """Write packed chunk rows (the refold corpus leaves them out: they never touch the surface)."""
    header: Line = field(default_factory=dict)
    batches: list[list[Line]] = field(default_factory=lambda: [[]])
    nodes: list[Node] = field(default_factory=list)
    counts: DshCounts = field(default_factory=DshCounts)
    _static: list[PrefixPoint] = field(default_factory=list)
    _points: list[PrefixPoint] = field(default_factory=list)
    _seq: int = 0
    _last_usage: CacheUsage | None = None

    def __post_init__(self) -> None:
        self.header = {"type": "session", "version": self.version, "id": self.session_id}
        self.header["createdAt"] = _iso(self.time_ms)
        if self.version >= 3:
            self.header["cwd"] = self.cwd
            self.header["title"] = self.title
        if self.parent is not None:
            self.header["parentSession"] = self.parent
        self._reset_static()

    @property
    def next_seq(self) -> int:
        """The seq the next event will get."""
        return self._seq

    @property
    def surface_tokens(self) -> int:
        """The heuristic price of the whole surface."""
        return sum(node.price for node in self.nodes)

    def flush(self) -> None:
        """Close the current append batch (a frame boundary in a zstd log)."""
        if self.batches[-1]:
            self.batches.append([])

    def emit(self, kind: str, data: dict[str, Any], *, dt_ms: int = 5, **extra: Any) -> int:
        """Append an event (``extra`` holds surfaceOp, sourceEventSeqs, ignorable); returns its seq."""
        self.time_ms += dt_ms
        seq = self._seq
        line: Line = {"type": kind, "seq": seq, "time": self.time_ms, "data": data}
        line.update(extra)
        self.batches[-1].append(line)
        self._seq += 1
        self.counts.events += 1
        return seq

    def packed(self, kind: str, members: list[str], data: dict[str, Any]) -> None:
        """A packed chunk row as the harness writes one: ``data`` holds ``turn``, ``step``, ``index``
        (and ``id``/``name`` for tool calls), ``dt`` the gaps between consecutive members."""
        if not self.chunks or not members:
            return
        dt = [self.rng.randint(0, 40) for _ in members[1:]]
        payload = "args" if kind == "tool-call-chunks" else "texts"
        row = {**data, "dt": dt, payload: members}
        self.time_ms += 1
        self.batches[-1].append({"type": kind, "seq0": self._seq, "time0": self.time_ms, "data": row})
        self._seq += len(members)
        self.counts.events += len(members)
        self.time_ms += sum(dt)

    def request_header(self, reason: str) -> None:
        """A ``request/header`` with the provider config (and, in version 0, the system prompt)."""
        header: dict[str, Any] = {
            "config": {"provider": "anthropic", "model": self.model, "maxTokens": 16000}
        }
        if self.version == 0:
            header["system"] = self.system_text
        header["tools"] = self.tools
        self.emit("request/header", {"header": header, "reason": reason})
        self.emit("request/context", {"provider": "anthropic", "model": self.model, "contextWindow": 200000})

    def change_model(self, model: str) -> None:
        """Switch models; the next request carries a new header."""
        self.model = model
        self._reset_static()
        self._rechain(0)
        self.request_header("change")

    def append(
        self, kind: str, data: dict[str, Any], message: dict[str, Any] | None = None, *, dt_ms: int = 5
    ) -> int:
        """Append a surface event; its message is ``message`` or else ``data["message"]``. Returns its seq."""
        message = data["message"] if message is None else message
        seq = self.emit(kind, data, dt_ms=dt_ms, surfaceOp="append")
        self._push(
            len(self.nodes), Node(seq, message_price(message), kind == "system/message", _canonical(message))
        )
        return seq

    def replace(
        self,
        kind: str,
        data: dict[str, Any],
        message: dict[str, Any],
        start: int,
        end: int,
        *,
        dt_ms: int = 5,
    ) -> int:
        """Replace the current nodes ``start..end`` (inclusive) by one new surface event."""
        shadowed = [node.seq for node in self.nodes[start : end + 1]]
        op: dict[str, Any] = {"op": "replace"}
        if self.version >= 4:
            op.update(startSeq=shadowed[0], endSeq=shadowed[-1])
        else:
            op.update(start=start, end=end)
        seq = self.emit(kind, data, dt_ms=dt_ms, surfaceOp=op, sourceEventSeqs=shadowed)
        node = Node(seq, message_price(message), kind == "system/message", _canonical(message))
        del self.nodes[start : end + 1]
        del self._points[start:]
        self.nodes.insert(start, node)
        self._rechain(start)
        return seq

    def range_price(self, start: int, end: int) -> int:
        """The exact heuristic price of the current nodes ``start..end``: what a metering event states."""
        return sum(node.price for node in self.nodes[start : end + 1])

    def bill(self) -> CacheUsage:
        """Bill a request for the current surface: breakpoints on the system prompt and the last two nodes."""
        static = len(self._static)
        positions = {static - 1} if static else set()
        first_system = next((i for i, node in enumerate(self.nodes) if node.system), None)
        if first_system is not None:
            positions.add(static + first_system)
        total = static + len(self.nodes)
        positions.update(p for p in (total - 1, total - 2) if p >= 0)
        marks = [Breakpoint(p) for p in sorted(positions)]
        prefix = _PrefixView(self._static, self._points)
        minimum = ANTHROPIC_MINIMUM.get(self.model, 1024)
        usage = self.cache.request(prefix, marks, minimum=minimum, at_s=self.time_ms / 1000)
        self._last_usage = usage
        return usage

    def record_usage(self, usage: CacheUsage, output: int) -> dict[str, int]:
        """Count a billed request and return its dsh usage object."""
        counts = self.counts
        counts.requests += 1
        counts.uncached_input += usage.uncached_input
        counts.cache_read += usage.cache_read
        counts.cache_write += usage.cache_write
        counts.output += output
        return {
            "inputTokens": usage.uncached_input,
            "cacheReadTokens": usage.cache_read,
            "cacheWriteTokens": usage.cache_write,
            "outputTokens": output,
        }

    def marker_layout(self) -> list[dict[str, Any]]:
        """The markers of the last billed request as a render record states them."""
        static = len(self._static)
        positions = [static - 1, static + len(self.nodes) - 2]
        prefix = _PrefixView(self._static, self._points)
        out = []
        for ordinal, pos in enumerate(p for p in positions if 0 <= p < len(prefix)):
            identity = "tools" if pos < static else f"seq:{self.nodes[pos - static].seq}"
            point = prefix[pos]
            out.append(
                {
                    "ordinal": ordinal,
                    "identity": identity,
                    "prefixHash": point.key.hex(),
                    "estimatedOffset": point.tokens,
                }
            )
        return out

    def _reset_static(self) -> None:
        units = [("tools:" + json.dumps(self.tools, sort_keys=True), 0)]
        if self.version == 0:
            units.append(("system:" + self.system_text, 0))
        key = extend_key(b"", f"{self.model}|dsh")
        total = 0
        self._static = []
        for text, _ in units:
            key = extend_key(key, text)
            total += estimate_tokens(text)
            self._static.append(PrefixPoint(key=key, tokens=total))

    def _push(self, index: int, node: Node) -> None:
        self.nodes.insert(index, node)
        self._rechain(index)

    def _rechain(self, start: int) -> None:
        del self._points[start:]
        if start == 0:
            previous = self._static[-1] if self._static else PrefixPoint(b"", 0)
        else:
            previous = self._points[start - 1]
        key, total = previous.key, previous.tokens
        for node in self.nodes[start:]:
            key = extend_key(key, node.text)
            total += node.price
            self._points.append(PrefixPoint(key=key, tokens=total))


def _canonical(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _iso(ms: int) -> str:
    return iso_z(datetime.fromtimestamp(ms / 1000, tz=UTC))
