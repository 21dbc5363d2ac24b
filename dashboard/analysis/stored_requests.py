"""A stored request row as the engine takes it: its usage, provider diagnosis and facts as a
:class:`RequestRecord`, with its body rebuilt from the block store when it had one.

The analysis reads sessions through these, and so does the context backfill; the rebuilding itself
(blocks back into a body, checked against the stored units) is the engine's, in
:mod:`projections.cache.render.rebuild`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from dashboard.models import Block, Request
from projections.cache.render.rebuild import StoredRequest, StoredRequestError, rebuild_request
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import Renderer
from projections.normalized import JSON, RequestRecord, Usage
from projections.providers.diagnosis import ProviderDiagnosis

READ_BATCH = 500
"""Blocks read per query: large enough to keep queries few, small enough for any database's
parameter limit."""
BODY_BATCH = 32
"""The most requests whose units :class:`StoredBodies` reads in one query."""
BODY_UNITS = 5_000
"""About how many units :class:`StoredBodies` reads at a time: a conversation that resends its
history has thousands a request late in the session, so its batches shrink to a few requests."""


def stored_usage(row: Request) -> Usage | None:
    """The row's usage buckets as the engine's :class:`Usage`; ``None`` when nothing was reported."""
    buckets = (
        row.uncached_input_tokens,
        row.cache_read_tokens,
        row.cache_write_5m_tokens,
        row.cache_write_1h_tokens,
        row.output_tokens,
    )
    if all(bucket is None for bucket in buckets):
        return None
    return Usage(
        uncached_input=row.uncached_input_tokens,
        cache_read=row.cache_read_tokens,
        cache_write_5m=row.cache_write_5m_tokens,
        cache_write_1h=row.cache_write_1h_tokens,
        output=row.output_tokens,
        convention=row.usage_convention or "anthropic",  # type: ignore[arg-type]
        raw=row.usage_raw or {},
    )


def stored_record_usage_only(row: Request) -> RequestRecord:
    """The stored request with its usage alone, for a request whose body cannot be rebuilt."""
    return RequestRecord(
        key=row.key,
        ordinal=row.ordinal,
        lineage=row.lineage,  # type: ignore[arg-type]
        provider=row.provider,
        platform=row.platform or row.provider,
        api=row.api,
        model=row.model,
        started_at=row.started_at,
        first_token_at=row.first_token_at,
        usage=stored_usage(row),
        status=row.status,
        provider_diagnosis=stored_diagnosis(row),
        client_version=row.client_version,
        endpoint=row.endpoint,
    )


def stored_diagnosis(row: Request) -> ProviderDiagnosis | None:
    """The provider's own cache diagnosis the row keeps; ``None`` when its response stated none."""
    if not row.provider_miss_reason:
        return None
    return ProviderDiagnosis(row.provider, row.provider_miss_reason, row.provider_missed_tokens)


def stored_request(row: Request) -> StoredRequest:
    """The row as the engine's :class:`StoredRequest`: its facts, usage, units and markers."""
    return StoredRequest(
        ref=row.pk,
        record=stored_record_usage_only(row),
        params=row.params,
        units=row.units,
        markers=row.markers,
        has_body=row.has_body,
    )


def stored_record(row: Request, raws: Mapping[str, JSON]) -> RequestRecord:
    """The stored request as the engine takes it, with its body rebuilt when it had one.

    Raises :class:`StoredRequestError` when the rebuilt body does not render to the stored units.
    """
    return rebuild_request(stored_request(row), raws)[0]


def block_raws(hashes: Iterable[str]) -> dict[str, JSON]:
    """Each block's JSON by hash, read in batches (one query per batch, never one per unit)."""
    wanted = list(dict.fromkeys(hashes))
    raws: dict[str, JSON] = {}
    for start in range(0, len(wanted), READ_BATCH):
        chunk = wanted[start : start + READ_BATCH]
        for block_hash, canonical in Block.objects.filter(hash__in=chunk).values_list("hash", "canonical"):
            raws[block_hash] = json.loads(canonical)
    return raws


class StoredBodies:
    """A session's stored bodies as the analysis asks for them (the engine's
    :class:`~projections.cache.session_analysis.RequestBodies`): rebuilt and rendered one request at a
    time, the units of the next requests in ``order`` read a batch ahead.

    What it holds is one batch's units (about :data:`BODY_UNITS`: each batch is sized by the units
    per request of the one before) and the blocks they name, whatever the session's length: each
    request's units are let go once it is rendered, and the blocks no unit of the batch names when
    the next batch is read. An earlier request asked for again is read alone.
    """

    def __init__(self, rows: Sequence[Request], order: Sequence[str]) -> None:
        self._rows = {row.key: row for row in rows}
        self._order = list(order)
        self._position = {key: i for i, key in enumerate(self._order)}
        self._batch = 4  # until the first batch says how many units a request holds
        self._read_until = 0
        self._units: dict[str, tuple[list[list[JSON]], list[dict[str, JSON]], dict[str, JSON]]] = {}
        self._raws: dict[str, JSON] = {}
        self._renderer = Renderer()

    def has_body(self, record: RequestRecord) -> bool:
        """Whether the request's row keeps a body."""
        return self._rows[record.key].has_body

    def render(self, record: RequestRecord) -> RenderedRequest:
        """The request's body rebuilt from its units and rendered; raises
        :class:`~projections.cache.render.rebuild.StoredRequestError` when it does not rebuild."""
        return self.rebuild(record)[1]

    def rebuild(self, record: RequestRecord) -> tuple[RequestRecord, RenderedRequest]:
        """The request with its body rebuilt from its units, and that body rendered (a what-if
        sends the body again with a change); raises
        :class:`~projections.cache.render.rebuild.StoredRequestError` when it does not rebuild."""
        row = self._rows[record.key]
        if record.key not in self._units:
            self._read(record.key)
        if record.key not in self._units:
            # Deleted since the session's rows were listed: a newer ingest's analysis follows.
            raise StoredRequestError(f"request {row.pk}: no longer stored")
        units, markers, params = self._units.pop(record.key)
        stored = StoredRequest(
            ref=row.pk, record=record, params=params, units=units, markers=markers, has_body=row.has_body
        )
        rebuilt, rendered = rebuild_request(stored, self._raws, self._renderer)
        assert rendered is not None  # a row with a body rebuilds to a rendering or raises
        return rebuilt, rendered

    def _read(self, key: str) -> None:
        position = self._position[key]
        if position < self._read_until:
            self._load([key], keep=True)  # an earlier request a later one continues
            return
        self._read_until = position + self._batch
        self._load(self._order[position : self._read_until], keep=False)

    def _load(self, keys: Sequence[str], *, keep: bool) -> None:
        ids = [self._rows[key].pk for key in keys if self._rows[key].has_body]
        found = Request.objects.filter(pk__in=ids).values_list("key", "units", "markers", "params")
        if not keep:
            self._units.clear()
        read = 0
        for key, units, markers, params in found:
            self._units[key] = (units, markers, params)
            read += len(units)
        if not keep and read:
            self._batch = max(1, min(BODY_BATCH, BODY_UNITS * len(keys) // read))
        wanted = {unit[0] for units, _, _ in self._units.values() for unit in units}
        if not keep:
            self._raws = {h: raw for h, raw in self._raws.items() if h in wanted}
        self._raws.update(block_raws(h for h in wanted if h not in self._raws))
