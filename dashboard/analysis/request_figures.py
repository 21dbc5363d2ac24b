"""The figures the requests list filters and sorts on, kept on each request's analysis row: what the
request cost, what its miss cost (:func:`projections.money.miss_cost`: the tokens below at the rate
they were billed, less the read rate) and the cached tokens it processed again.

Re-processed tokens of a request: of the prefix the previous request of its lineage left cached
(that request's read plus its writes), what this one did not read and so sent through the model
again, at most what it did not read of its own prompt (its uncached input plus its writes). The
first request of a lineage re-processes nothing: nothing of its lineage was cached before it. The
miss label and cause of the same row say why; this says how much. It is the shortfall
(:func:`~dashboard.costs.pricing.cached_shortfall`) the session cost's re-written tokens are drawn
from, counted whether the provider wrote it again or read it as plain input. It is not the session
cost's wasted writes, which are tokens written and never read back.

The column that keeps it is still named ``wasted_tokens`` (as are the list's ``min_wasted`` and
``sort=wasted`` parameters), so stored rows and saved links stay as they are.

Both figures come from reported usage and the lineage the analysis decided
(:attr:`~dashboard.models.Request.current_lineage`); the cost from the price table as it stood when
the analysis was stored. ``manage.py refresh_request_figures`` figures them again after a price
change, and for rows analysed before the columns existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection, transaction

from dashboard.costs.pricing import (
    COST_PLACES,
    Price,
    Tokens,
    price_match,
    prices_load,
    reprocessed_tokens,
    rewritten_writes,
    row_tokens,
    usage_cost,
)
from dashboard.models import Request, RequestAnalysis
from dashboard.models.requests import current_lineage
from projections.money import miss_cost

WRITE_BATCH = 500


@dataclass(frozen=True, slots=True)
class FigureInput:
    """One request as its figures need it, in the session's request order."""

    request_id: int
    lineage: str
    model: str
    tokens: Tokens


@dataclass(frozen=True, slots=True)
class RequestFigures:
    reprocessed_tokens: int
    """Kept in :attr:`RequestAnalysis.wasted_tokens <dashboard.models.RequestAnalysis.wasted_tokens>`."""
    rewritten_tokens: int
    """Of those, the ones written to the cache again: the session cost's re-written tokens, request
    by request, which the overview ranks sessions by."""
    cost: Decimal | None
    """``None`` when no price matches the request's model."""
    miss_cost: Decimal | None = None
    """What its re-processed tokens cost beyond a read; ``None`` when no price matches its model."""


def request_figures(*, calls: Iterable[FigureInput], prices: Sequence[Price]) -> dict[int, RequestFigures]:
    """Each request's figures by request id; ``calls`` in request order, any mix of lineages."""
    previous: dict[str, Tokens] = {}
    matched: dict[str, Price | None] = {}  # a session uses few models: match each once
    figures: dict[int, RequestFigures] = {}
    for call in calls:
        if call.model not in matched:
            matched[call.model] = price_match(model=call.model, prices=prices)
        price = matched[call.model]
        before = previous.get(call.lineage)
        cost = missed = None
        if price is not None:
            cost = usage_cost(tokens=call.tokens, price=price).quantize(COST_PLACES)
            missed = miss_cost(before, call.tokens, price).quantize(COST_PLACES)
        reprocessed = reprocessed_tokens(before, call.tokens)
        rewritten = sum(rewritten_writes(before, call.tokens))
        figures[call.request_id] = RequestFigures(reprocessed, rewritten, cost, missed)
        previous[call.lineage] = call.tokens
    return figures


def figure_inputs(rows: Iterable[Request]) -> list[FigureInput]:
    """Stored requests, given in order, as their figures need them."""
    return [
        FigureInput(
            row.pk,
            row.current_lineage,
            row.model,
            row_tokens(row),
        )
        for row in rows
    ]


def request_figures_refresh(*, session_ids: Sequence[int], prices: Sequence[Price] | None = None) -> int:
    """Figure again the stored analyses of the listed sessions; the number of rows written.

    Three queries however many sessions (the requests, the analysis ids, the writes in batches).
    """
    if not session_ids:
        return 0
    prices = prices_load() if prices is None else prices
    rows = (
        Request.objects.filter(session_id__in=session_ids)
        .order_by("session_id", "ordinal", "id")
        .values_list(
            "pk",
            "session_id",
            current_lineage(),
            "model",
            "uncached_input_tokens",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "output_tokens",
        )
    )
    calls = [
        # Lineages are named per session: key them by session too.
        FigureInput(pk, f"{session_id}:{lineage}", model, Tokens(*(n or 0 for n in tokens)))
        for pk, session_id, lineage, model, *tokens in rows.iterator()
    ]
    figures = request_figures(calls=calls, prices=prices)
    analyses = RequestAnalysis.objects.filter(session_id__in=session_ids).values_list("pk", "request_id")
    changed = [
        (pk, figure.reprocessed_tokens, figure.rewritten_tokens, figure.cost, figure.miss_cost)
        for pk, request_id in analyses.iterator()
        if (figure := figures.get(request_id)) is not None
    ]
    with transaction.atomic():
        for start in range(0, len(changed), WRITE_BATCH):
            _figures_write(changed[start : start + WRITE_BATCH])
    return len(changed)


def _figures_write(rows: Sequence[tuple[int, int, int, Decimal | None, Decimal | None]]) -> None:
    """Write (analysis id, re-processed tokens, re-written tokens, cost, miss cost) rows. On PostgreSQL one
    ``UPDATE … FROM (VALUES …)`` per batch: ``bulk_update`` builds a CASE per row in Python, some
    5 ms a row, an hour for a fleet."""
    if connection.vendor != "postgresql":
        RequestAnalysis.objects.bulk_update(
            [
                RequestAnalysis(
                    pk=pk, wasted_tokens=reprocessed, rewritten_tokens=rewritten, cost=cost, miss_cost=missed
                )
                for pk, reprocessed, rewritten, cost, missed in rows
            ],
            ["wasted_tokens", "rewritten_tokens", "cost", "miss_cost"],
        )
        return
    table = connection.ops.quote_name(RequestAnalysis._meta.db_table)
    values = ", ".join(["(%s::bigint, %s::bigint, %s::bigint, %s::numeric, %s::numeric)"] * len(rows))
    # Only the model's own table name and placeholders are formatted in; every value is a parameter.
    sql = (
        f"UPDATE {table} AS analysis SET wasted_tokens = v.reprocessed, "  # noqa: S608
        f"rewritten_tokens = v.rewritten, cost = v.cost, miss_cost = v.miss_cost "
        f"FROM (VALUES {values}) AS v (id, reprocessed, rewritten, cost, miss_cost) WHERE analysis.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [value for row in rows for value in row],
        )
