"""Each session's cost, priced from its stored ledger (:class:`~dashboard.models.SessionCostLedger`).

A session's cost needs its requests in order, and a 90-day overview's wasted-writes panel weighs
some 18,000 of them: priced call by call that took a third of a second on the first view after a
restart or a price change. The ledger keeps, per model, the sums those figures are made of, so a
session is priced from a few numbers whatever the price table says. It is kept with the key of the
requests and analysis it was made from (:func:`session_inputs_key`): the analysis writes it, and a
page that finds it missing or made from older rows makes it again from the requests and stores it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import OperationalError, transaction
from django.db.models import Count, Max

from dashboard.costs.ledger import CostLedger, ModelTally, cost_ledger, ledger_cost
from dashboard.costs.pricing import SessionCost, prices_load, session_calls_load
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


def ledgers_store(ledgers: Mapping[int, tuple[str, CostLedger]]) -> None:
    """Keep each session's ledger under its key, replacing any older one; one query."""
    SessionCostLedger.objects.bulk_create(
        [
            SessionCostLedger(session_id=pk, inputs_key=_stored_key(key), tallies=ledger_as_json(ledger))
            for pk, (key, ledger) in ledgers.items()
        ],
        update_conflicts=True,
        unique_fields=["session"],
        update_fields=["inputs_key", "tallies"],
    )


def _stored_key(inputs_key: str) -> str:
    return f"{LEDGER_FORMAT}:{inputs_key}"[:255]


def ledger_as_json(ledger: CostLedger) -> dict[str, list[int]]:
    return {model: tally.as_list() for model, tally in ledger.items()}


def ledger_of_json(data: Mapping[str, Sequence[int]]) -> CostLedger:
    return {model: ModelTally.of_list(values) for model, values in data.items()}
