"""Each session's cost, priced from its stored ledger (:class:`~dashboard.models.SessionCostLedger`).

A session's cost needs its requests in order, and a 90-day overview's wasted-writes panel weighs
some 18,000 of them: priced call by call that took a third of a second on the first view after a
restart or a price change. The ledger keeps, per model, the sums those figures are made of, so a
session is priced from a few numbers whatever the price table says. It is kept with the key of the
requests and analysis it was made from (:func:`session_inputs_key`): the analysis writes it, and a
page that finds it missing or made from older rows makes it again from the requests and stores it.

Whenever a ledger is stored, the session's cost at the prices of the table is kept beside it in
:attr:`Session.cost_usd <dashboard.models.Session.cost_usd>` (with the requests no price matched),
which the sessions list sorts on and ``manage.py report`` prints; a change to the price table
prices every session again from its ledger (:func:`sessions_reprice`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from django.db import OperationalError, connection, transaction
from django.db.models import Count, Max

from dashboard.costs.ledger import CostLedger, ModelTally, cost_ledger, ledger_cost
from dashboard.costs.pricing import (
    COST_PLACES,
    Price,
    SessionCost,
    price_match,
    prices_load,
    session_calls_load,
)
from dashboard.models import ModelPrice, Session, SessionAnalysis, SessionCostLedger

log = logging.getLogger(__name__)

LEDGER_FORMAT = "1"
"""Stored with each ledger's key: a change to :class:`~dashboard.costs.ledger.ModelTally` moves it
on, and every ledger is made again on its first read. So must a migration that rewrites stored
requests (their model, start, order or lineage) without changing the session's sums or analysis,
which the key names: or it deletes the ledgers."""


def session_inputs_key(*, session: Session, analysis: SessionAnalysis | None) -> str:
    """A key naming the session's requests (their number and token sums) and its stored analysis,
    which gives them their lineages: what a session's cost is figured from besides the prices."""
    stored = "-" if analysis is None else analysis_stamp(analysis.stored_generation, analysis.finished_at)
    return session_key(session, stored)


def analysis_stamp(generation: int, finished_at: datetime | None) -> str:
    """What :func:`session_inputs_key` names of a stored analysis."""
    return f"{generation}.{finished_at.timestamp() if finished_at else 0}"


def session_key(session: Session, stamp: str) -> str:
    """:func:`session_inputs_key` from a session and its analysis's :func:`analysis_stamp`."""
    born = session.created_at.timestamp() if session.created_at else 0
    usage = (
        session.request_count,
        session.uncached_input_tokens,
        session.cache_read_tokens,
        session.cache_write_tokens,
        session.cache_write_1h_tokens,
        session.output_tokens,
    )
    return f"{session.pk}:{born}:{':'.join(map(str, usage))}:{stamp}"


def prices_version() -> str:
    """Changes whenever a price is added, edited or removed."""
    prices = ModelPrice.objects.aggregate(rows=Count("id"), edited=Max("updated_at"))
    edited = prices["edited"].timestamp() if prices["edited"] else 0
    return f"{prices['rows']}.{edited}"


def sessions_cost(*, keys: Mapping[int, str]) -> dict[int, SessionCost]:
    """The cost figures of each session of ``keys`` (session id → its :func:`session_inputs_key`) at
    today's prices: from its ledger where that was made under the same key, else from its requests,
    whose ledger is then stored. Two queries when every ledger is current, four at most."""
    if not keys:
        return {}
    ledgers, _made = _current_ledgers(keys)
    prices = prices_load()
    return {pk: ledger_cost(ledgers[pk], prices) for pk in keys}


def ledgers_refresh(*, session_ids: Sequence[int]) -> int:
    """Make and store the ledger of each listed session that has none, or one made from older rows
    (after an upgrade that brought ledgers); the number made."""
    sessions = Session.objects.filter(pk__in=list(session_ids)).select_related("analysis")
    _ledgers, made = _current_ledgers({session.pk: inputs_key_of(session) for session in sessions})
    return len(made)


LEDGER_BATCH = 200


def ledgers_make_missing(*, batch: int = LEDGER_BATCH) -> int:
    """Make the ledger of every session that has none, ``batch`` sessions at a time; the number made.

    Run after each ``migrate``: sessions stored before ledgers existed then have theirs, so the
    first page that prices many of them (the overview's wasted writes) does not make them all at
    once. One query when no ledger is missing.
    """
    ids = list(Session.objects.filter(cost_ledger__isnull=True).order_by("pk").values_list("pk", flat=True))
    return sum(ledgers_refresh(session_ids=ids[start : start + batch]) for start in range(0, len(ids), batch))


def inputs_key_of(session: Session) -> str:
    """:func:`session_inputs_key` of a session read with its analysis (``select_related``)."""
    try:
        analysis: SessionAnalysis | None = session.analysis
    except SessionAnalysis.DoesNotExist:
        analysis = None
    return session_inputs_key(session=session, analysis=analysis)


def _current_ledgers(keys: Mapping[int, str]) -> tuple[dict[int, CostLedger], list[int]]:
    """Each session's ledger as its rows are now, and the sessions whose ledger had to be made."""
    if not keys:
        return {}, []
    stored = SessionCostLedger.objects.filter(session_id__in=list(keys)).values_list(
        "session_id", "inputs_key", "tallies"
    )
    ledgers = {pk: ledger_of_json(tallies) for pk, key, tallies in stored if key == _stored_key(keys[pk])}
    missing = [pk for pk in keys if pk not in ledgers]
    if missing:
        made = {pk: cost_ledger(calls) for pk, calls in session_calls_load(session_ids=missing).items()}
        try:
            # A savepoint of its own: a write refused (SQLite busy behind a long ingest) leaves the
            # caller's transaction usable, and the page shows the cost it made all the same.
            with transaction.atomic():
                ledgers_store({pk: (keys[pk], ledger) for pk, ledger in made.items()})
        except OperationalError:
            log.warning("session cost ledgers not stored for %d sessions", len(made), exc_info=True)
        ledgers.update(made)
    return ledgers, missing


def session_cost(*, session: Session, analysis: SessionAnalysis | None) -> SessionCost:
    """:func:`sessions_cost` of one session."""
    return sessions_cost(keys={session.pk: session_inputs_key(session=session, analysis=analysis)})[
        session.pk
    ]


def ledgers_store(
    ledgers: Mapping[int, tuple[str, CostLedger]], *, prices: Sequence[Price] | None = None
) -> None:
    """Keep each session's ledger under its key, replacing any older one, and the session's cost at
    ``prices`` (the table's, read here when not given) beside it; two or three queries."""
    SessionCostLedger.objects.bulk_create(
        [
            SessionCostLedger(session_id=pk, inputs_key=_stored_key(key), tallies=ledger_as_json(ledger))
            for pk, (key, ledger) in ledgers.items()
        ],
        update_conflicts=True,
        unique_fields=["session"],
        update_fields=["inputs_key", "tallies"],
    )
    table = prices_load() if prices is None else prices
    session_costs_store({pk: ledger_cost(ledger, table) for pk, (_key, ledger) in ledgers.items()})


def session_costs_store(costs: Mapping[int, SessionCost]) -> None:
    """Keep each session's cost and its unpriced requests in its row, for the list to sort on.

    On PostgreSQL one ``UPDATE … FROM (VALUES …)`` per thousand sessions, as the request figures
    are written: ``bulk_update``'s CASE per row took 18 s for 20,000 sessions.
    """
    rows = [
        (pk, None if cost.total is None else cost.total.quantize(COST_PLACES), cost.unpriced_requests)
        for pk, cost in costs.items()
    ]
    for start in range(0, len(rows), REPRICE_BATCH):
        _costs_write(rows[start : start + REPRICE_BATCH])


def _costs_write(rows: Sequence[tuple[int, Decimal | None, int]]) -> None:
    if not rows:
        return
    if connection.vendor != "postgresql":
        sessions = [Session(pk=pk, cost_usd=cost, unpriced_requests=unpriced) for pk, cost, unpriced in rows]
        Session.objects.bulk_update(sessions, ["cost_usd", "unpriced_requests"], batch_size=LEDGER_BATCH)
        return
    table = connection.ops.quote_name(Session._meta.db_table)
    values = ", ".join(["(%s::bigint, %s::numeric, %s::integer)"] * len(rows))
    # Only the model's own table name and placeholders are formatted in; every value is a parameter.
    sql = (
        f"UPDATE {table} AS session SET cost_usd = v.cost, unpriced_requests = v.unpriced "  # noqa: S608
        f"FROM (VALUES {values}) AS v (id, cost, unpriced) WHERE session.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row])


REPRICE_BATCH = 1000


def sessions_reprice(*, session_ids: Sequence[int] | None = None, batch: int = REPRICE_BATCH) -> int:
    """Price every session (or those listed) again from its ledger at the prices of the table, after
    the table changed; a session without a current ledger has it made. The number whose cost or
    unpriced count changed, which alone are written.

    At 100,000 sessions: their ledgers read a thousand at a time, a few sums each, and the changed
    rows written back in batches; no request is read unless a ledger is missing.
    """
    ids = (
        list(session_ids)
        if session_ids is not None
        else list(Session.objects.order_by("pk").values_list("pk", flat=True))
    )
    prices = prices_load()
    changed = 0
    for start in range(0, len(ids), batch):
        changed += _reprice_batch(ids[start : start + batch], prices)
    return changed


def sessions_price_unpriced() -> int:
    """:func:`sessions_reprice` for the sessions never priced (stored before sessions kept their
    cost: no cost, and no request counted as unpriced); one query when none is."""
    never = Session.objects.filter(cost_usd__isnull=True, unpriced_requests=0)
    return sessions_reprice(session_ids=list(never.order_by("pk").values_list("pk", flat=True)))


def _reprice_batch(ids: Sequence[int], prices: Sequence[Price]) -> int:
    sessions = list(Session.objects.filter(pk__in=list(ids)).select_related("analysis"))
    ledgers, _made = _current_ledgers({session.pk: inputs_key_of(session) for session in sessions})
    changed: dict[int, SessionCost] = {}
    for session in sessions:
        cost = ledger_cost(ledgers[session.pk], prices)
        total = None if cost.total is None else cost.total.quantize(COST_PLACES)
        if (total, cost.unpriced_requests) != (session.cost_usd, session.unpriced_requests):
            changed[session.pk] = cost
    session_costs_store(changed)
    return len(changed)


def _stored_key(inputs_key: str) -> str:
    return f"{LEDGER_FORMAT}:{inputs_key}"[:255]


def ledger_as_json(ledger: CostLedger) -> dict[str, list[int]]:
    return {model: tally.as_list() for model, tally in ledger.items()}


def ledger_of_json(data: Mapping[str, Sequence[int]]) -> CostLedger:
    return {model: ModelTally.of_list(values) for model, values in data.items()}


def listed_sessions_priced(sessions: Sequence[Session]) -> None:
    """Give those of ``sessions`` (read from the database, as a list page or an export holds them)
    that were never priced their cost columns, from a ledger made now, so every listed row shows the
    cost the list sorts by. A write refused (SQLite busy behind an ingest) leaves them unpriced for
    this answer only."""
    never = [s.pk for s in sessions if s.cost_usd is None and not s.unpriced_requests]
    if not never:
        return
    try:
        with transaction.atomic():
            sessions_reprice(session_ids=never)
    except OperationalError:
        log.warning("session costs not stored for %d sessions", len(never), exc_info=True)
        return
    stored = Session.objects.filter(pk__in=never).values_list("pk", "cost_usd", "unpriced_requests")
    figures = {pk: (cost, unpriced) for pk, cost, unpriced in stored}
    for session in sessions:
        if session.pk in figures:
            session.cost_usd, session.unpriced_requests = figures[session.pk]


def unpriced_models(session: Session, prices: Sequence[Price]) -> list[str]:
    """The models of ``session`` no price matches: what its "no price for MODEL" names."""
    return [model for model in session.models_list if price_match(model=model, prices=prices) is None]
