"""A request record of an import as its ``Request`` row: usage buckets, provider diagnosis, the
context figures the page shows, and its body as units of the block store.

Ingest builds each row here and writes them in batches; nothing here touches the database but the
block store's queue.
"""

from __future__ import annotations

from dashboard.ingest.blocks import BlockStore
from dashboard.models import Request, Session
from projections.context_series import request_figures
from projections.normalized import LineError, RequestRecord
from projections.prices import PriceError
from projections.providers.model_windows import host_of_format


def request_row(
    session: Session,
    record: RequestRecord,
    ordinal: int,
    blocks: BlockStore,
    path: str,
    errors: list[LineError],
) -> Request:
    """The ``Request`` row for ``record``, its ``ordinal``-th in ``session``, not yet saved: its usage,
    context figures and, when it has a body, the body rendered into ``blocks``' units.

    A body that cannot be priced or rendered is reported in ``errors`` (the row keeps its usage).
    """
    row = Request(
        session=session,
        ordinal=ordinal,
        key=record.key[:200],
        lineage=record.lineage,
        provider=record.provider,
        platform=record.platform,
        api=record.api,
        model=record.model[:120],
        started_at=record.started_at,
        first_token_at=record.first_token_at,
        status=record.status,
        client_version=record.client_version[:60],
        endpoint=record.endpoint[:200],
    )
    if record.provider_diagnosis is not None:
        row.provider_miss_reason = record.provider_diagnosis.reason[:60]
        row.provider_missed_tokens = record.provider_diagnosis.missed_tokens
    if record.usage is not None:
        usage = record.usage
        row.uncached_input_tokens = usage.uncached_input
        row.cache_read_tokens = usage.cache_read
        row.cache_write_5m_tokens = usage.cache_write_5m
        row.cache_write_1h_tokens = usage.cache_write_1h
        row.output_tokens = usage.output
        row.usage_convention = usage.convention
        row.usage_raw = dict(usage.raw)
    try:
        figures = request_figures(record, host=host_of_format(session.format))
    except PriceError as error:
        errors.append(LineError(path, record.line, "request.body", str(error)))
    else:
        row.context_window = figures.context_window
        if figures.breakdown is not None:
            row.system_tokens = figures.breakdown.system_tokens
            row.tools_tokens = figures.breakdown.tools_tokens
            row.message_tokens = figures.breakdown.message_tokens
    if record.body is not None:
        # The render engine loads with the first body: a transcript's calls have none.
        from projections.cache.render.rendering import RenderError

        try:
            rendered = blocks.render(record)
        except RenderError as error:
            # The usage still counts; only the content analysis of this request is lost.
            errors.append(LineError(path, record.line, "request.body", str(error)))
        else:
            row.has_body = True
            row.params = rendered.params
            row.units = rendered.units
            row.markers = rendered.markers
            row.render_warnings = rendered.warnings
    return row
