"""A stored request row as the engine takes it: its usage, provider diagnosis and facts as a
:class:`RequestRecord`, with its body rebuilt from the block store when it had one.

The analysis reads sessions through these, and so does the context backfill; the rebuilding itself
(blocks back into a body, checked against the stored units) is the engine's, in
:mod:`projections.cache.rebuild`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from dashboard.models import Block, Request
from projections.cache.rebuild import StoredRequest, rebuild_request
from projections.cache.rendered_request import RenderedRequest
from projections.normalized import JSON, RequestRecord, Usage
from projections.provider_diagnosis import ProviderDiagnosis

READ_BATCH = 500
"""Blocks read per query: large enough to keep queries few, small enough for any database's
parameter limit."""


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


def stored_rendering(row: Request, raws: Mapping[str, JSON]) -> tuple[RequestRecord, RenderedRequest | None]:
    """:func:`stored_record`, with the rebuilt body's rendering (``None`` without a body)."""
    return rebuild_request(stored_request(row), raws)


def block_raws(hashes: Iterable[str]) -> dict[str, JSON]:
    """Each block's JSON by hash, read in batches (one query per batch, never one per unit)."""
    wanted = list(dict.fromkeys(hashes))
    raws: dict[str, JSON] = {}
    for start in range(0, len(wanted), READ_BATCH):
        chunk = wanted[start : start + READ_BATCH]
        for block_hash, canonical in Block.objects.filter(hash__in=chunk).values_list("hash", "canonical"):
            raws[block_hash] = json.loads(canonical)
    return raws
