"""``manage.py refresh_request_figures [--session ID ...]``: figure again each analysed request's
wasted tokens and cost, after a price change or for analyses stored before those columns existed,
so the requests list filters and sorts on current figures."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.models import SessionAnalysis
from dashboard.services.costs import prices_load
from dashboard.services.request_figures import request_figures_refresh

SESSIONS_PER_BATCH = 200


class Command(BaseCommand):
    help = "Figure again the wasted tokens and cost of analysed requests (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", help="Only this session id (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = SessionAnalysis.objects.order_by("session_id").values_list("session_id", flat=True)
        if options["session"]:
            sessions = sessions.filter(session_id__in=options["session"])
        ids = list(sessions)
        prices = prices_load()
        written = 0
        for start in range(0, len(ids), SESSIONS_PER_BATCH):
            batch = ids[start : start + SESSIONS_PER_BATCH]
            written += request_figures_refresh(session_ids=batch, prices=prices)
        self.stdout.write(f"{written} analysed requests in {len(ids)} sessions figured again")
