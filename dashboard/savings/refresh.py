"""Replay a stored session or a log file under the what-if scenarios, and keep a session's results.

:func:`session_savings_refresh` is the one a task calls after each analysis: it replays the
session, prices it at the price table's prices and replaces the session's
:class:`~dashboard.models.SessionSavings` and :class:`~dashboard.models.ScenarioSaving` rows in one
transaction. Run twice it leaves the same rows; run on figures still current it does nothing. A
session the engine cannot price (a model without a price, no request with usage) keeps a row that
says why, with no figures, rather than none: a page shows the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.db import OperationalError, transaction
from django.utils import timezone

from dashboard.costs.pricing import Price, prices_load
from dashboard.costs.session_costs import inputs_key_of, prices_version
from dashboard.models import ScenarioSaving, Session, SessionSavings
from dashboard.savings.inputs import WhatIfInputs, file_inputs, stored_inputs
from dashboard.storage.gc_pause import gc_paused
from projections.cache.whatif.scenarios import BEST
from projections.cache.whatif.session import NoRequestsError, WhatIf, whatif_session
from projections.cache.whatif.tally import UnpricedModelError

log = logging.getLogger(__name__)

RULES_VERSION = "2"
"""Stored with each session's figures: a change to the scenarios or their rules moves it on, and
every session's figures are made again on their next refresh."""

WRITE_BATCH = 500


class SessionNotFoundError(LookupError):
    """No stored session has the id or external id given."""


def whatif_inputs(
    inputs: WhatIfInputs, *, prices: Sequence[Price], scenarios: Iterable[str] | None = None
) -> WhatIf:
    """The what-if of one session's inputs (stored or read from a file); raises the engine's errors
    (an unknown scenario, no request, a model without a price) naming what is wrong.

    The collector is paused, as for an analysis: the replay builds many short-lived renderings,
    none in a reference cycle."""
    with gc_paused():
        return whatif_session(
            inputs.records,
            inputs.events,
            prices=prices,
            scenarios=scenarios,
            bodies=inputs.bodies,
            parents=inputs.parents,
        )


@dataclass(slots=True)
class FileWhatIf:
    """The what-if of each session of a log file, and the sessions it holds without any request."""

    sessions: list[tuple[WhatIfInputs, WhatIf]] = field(default_factory=list)
    empty: list[WhatIfInputs] = field(default_factory=list)


def file_whatif(
    *, path: Path, scenarios: Iterable[str] | None = None, format: str | None = None
) -> FileWhatIf:
    """The what-if of every session of a log file, read without storing anything. A session
    without a request with usage is set aside (``empty``); raises
    :class:`~projections.cache.whatif.session.NoRequestsError` naming the file when every one is."""
    prices = prices_load()
    asked = list(scenarios) if scenarios is not None else None
    found = FileWhatIf()
    for inputs in file_inputs(path, format=format):
        try:
            found.sessions.append((inputs, whatif_inputs(inputs, prices=prices, scenarios=asked)))
        except NoRequestsError:
            found.empty.append(inputs)
    if not found.sessions:
        names = ", ".join(inputs.name for inputs in found.empty) or "none"
        raise NoRequestsError(f"{path}: no session has a request with reported usage (sessions: {names})")
    return found


def session_find(reference: str) -> Session:
    """The stored session whose id (the number in its page's address) or external id is
    ``reference``; raises :class:`SessionNotFoundError` when none is, or several are."""
    if reference.isdigit():
        found = Session.objects.filter(pk=int(reference)).first()
        if found is not None:
            return found
    named = list(Session.objects.filter(external_id=reference).select_related("source")[:2])
    if not named:
        raise SessionNotFoundError(f"no stored session has the id or external id {reference!r}")
    if len(named) > 1:
        sources = ", ".join(session.source.name for session in named)
        raise SessionNotFoundError(
            f"several stored sessions have the external id {reference!r} (sources {sources}): give its id"
        )
    return named[0]


def session_whatif(
    *, session: Session, scenarios: Iterable[str] | None = None, prices: Sequence[Price] | None = None
) -> WhatIf:
    """The what-if of a stored session, read from the store without changing it; at ``prices``
    (the price table's, read here when not given)."""
    table = prices_load() if prices is None else prices
    return whatif_inputs(stored_inputs(session), prices=table, scenarios=scenarios)


def savings_inputs_key(session: Session, *, prices_key: str | None = None) -> str:
    """What a session's figures are made from: the rules' version, its requests and analysis
    (:func:`~dashboard.costs.session_costs.inputs_key_of`) and the price table's state
    (``prices_key``, :func:`prices_version`, read here when not given)."""
    table = prices_version() if prices_key is None else prices_key
    return f"{RULES_VERSION}:{table}:{inputs_key_of(session)}"[:255]


def session_savings(*, session: Session) -> SessionSavings:
    """The session's stored figures, made again first when missing or out of date."""
    current = SessionSavings.objects.filter(session=session).first()
    if current is not None and current.inputs_key == savings_inputs_key(session):
        return current
    session_savings_refresh(session_id=session.pk)
    return SessionSavings.objects.get(session=session)


def session_savings_refresh(
    *,
    session_id: int,
    force: bool = False,
    prices: Sequence[Price] | None = None,
    prices_key: str | None = None,
) -> bool:
    """Replay session ``session_id`` and store its figures; ``False`` when it is gone, or its
    figures were current already (unless ``force``). Safe to run twice or from several workers:
    the rows are replaced in one transaction, under a lock of the session's row.

    ``prices`` and ``prices_key``: the price table and its :func:`prices_version`, given by a caller
    that refreshes many sessions so that each does not read them again."""
    session = Session.objects.filter(pk=session_id).select_related("analysis").first()
    if session is None:
        return False
    key = savings_inputs_key(session, prices_key=prices_key)
    if not force and SessionSavings.objects.filter(session=session, inputs_key=key).exists():
        return False
    try:
        whatif: WhatIf | None = session_whatif(session=session, prices=prices)
        error = ""
    except (NoRequestsError, UnpricedModelError) as problem:
        whatif, error = None, str(problem)
    _store(session, key, whatif, error)
    return True


def sessions_savings_refresh(*, session_ids: Sequence[int]) -> int:
    """:func:`session_savings_refresh` for each session in turn; how many were made.

    A session whose replay fails for another reason keeps a row naming the error and the others
    are still made; a database that cannot be reached stops them all, for the task to retry.
    """
    made = 0
    # Read once for the batch: a first ingest refreshes hundreds of sessions, each of which read
    # the table twice.
    prices, prices_key = prices_load(), prices_version()
    for session_id in dict.fromkeys(session_ids):
        try:
            made += session_savings_refresh(session_id=session_id, prices=prices, prices_key=prices_key)
        except OperationalError:
            raise
        except Exception as problem:
            log.exception("what-if of session %s failed", session_id)
            session = Session.objects.filter(pk=session_id).select_related("analysis").first()
            if session is not None:
                key = savings_inputs_key(session, prices_key=prices_key)
                _store(session, key, None, f"{type(problem).__name__}: {problem}")
    return made


def _store(session: Session, key: str, whatif: WhatIf | None, error: str) -> None:
    results = whatif.results if whatif is not None else ()
    by_name = {result.scenario: result for result in results}
    recorded = by_name.get("as-recorded")
    best = by_name.get(BEST)
    rows = [
        ScenarioSaving(
            session=session,
            scenario=result.scenario,
            model=group.key.model[:200],
            client_version=group.key.client_version[:60],
            cause=group.key.cause[:120],
            requests=group.requests,
            touched=group.touched,
            recorded_cost=_places(group.recorded_cost),
            cost=_places(group.cost),
            saving=_places(group.saving),
        )
        for result in results
        if result.supported
        for group in result.groups
    ]
    with transaction.atomic():
        # Lock the session row: two refreshes of one session write one after the other.
        Session.objects.select_for_update(no_key=True).filter(pk=session.pk).first()
        ScenarioSaving.objects.filter(session=session).delete()
        ScenarioSaving.objects.bulk_create(rows, batch_size=WRITE_BATCH)
        SessionSavings.objects.update_or_create(
            session=session,
            defaults={
                "inputs_key": key,
                "computed_at": timezone.now(),
                "error": error,
                "recorded_cost": _places(recorded.cost) if recorded is not None else None,
                "reported_cost": _places(recorded.reported_cost) if recorded is not None else None,
                "best_scenario": "+".join(best.combination)[:200]
                if best is not None and best.supported
                else "",
                "best_saving": _places(best.saving) if best is not None and best.supported else None,
                "results": whatif.to_json() if whatif is not None else [],
                "request_tokens": whatif.request_tokens() if whatif is not None else {},
            },
        )


def _places(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(Decimal("0.00000001"))
