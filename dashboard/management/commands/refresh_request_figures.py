"""``manage.py refresh_request_figures [--session ID ...]``: figure again each analysed request's
re-processed tokens and cost, and what each of its warnings puts at stake, after a price change or for
analyses stored before those figures existed, so the requests list and the inbox sort on current
figures; and each session's cost ledger where it has none or an out-of-date one (after the upgrade
that brought ledgers), so no page has to make it on its first view; and each session's cost column,
which the sessions list sorts on."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.analysis.request_figures import request_figures_refresh
from dashboard.analysis.warnings import warning_stakes_refresh
from dashboard.costs.pricing import prices_load
from dashboard.costs.session_costs import ledgers_refresh, sessions_reprice
from dashboard.models import SessionAnalysis

SESSIONS_PER_BATCH = 200


class Command(BaseCommand):
    help = (
        "Figure again analysed requests' re-processed tokens and cost and their warnings' stakes, and "
        "make missing session cost ledgers (idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", help="Only this session id (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = SessionAnalysis.objects.order_by("session_id").values_list("session_id", flat=True)
        if options["session"]:
            sessions = sessions.filter(session_id__in=options["session"])
        ids = list(sessions)
        prices = prices_load()
        written = staked = ledgers = 0
        for start in range(0, len(ids), SESSIONS_PER_BATCH):
            batch = ids[start : start + SESSIONS_PER_BATCH]
            written += request_figures_refresh(session_ids=batch, prices=prices)
            staked += warning_stakes_refresh(session_ids=batch, prices=prices)
            ledgers += ledgers_refresh(session_ids=batch)
        repriced = sessions_reprice(session_ids=options["session"] or None)
        self.stdout.write(
            f"{written} analysed requests and {staked} warnings in {len(ids)} sessions figured again; "
            f"{ledgers} session cost ledgers made; {repriced} session costs changed"
        )
