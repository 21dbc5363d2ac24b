"""``manage.py backfill_context [--session ID ...]``: give requests stored before ingest priced their
context (system, tools, messages, answering event, window) those figures, so their session pages
show them."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.ingest.context_backfill import context_backfill


class Command(BaseCommand):
    help = "Price the context of requests stored without it (idempotent; only rows missing figures)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", help="Only this session id (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        summary = context_backfill(session_ids=options["session"])
        for error in summary.errors:
            self.stderr.write(error)
        self.stdout.write(
            f"{summary.requests} requests in {summary.sessions} sessions given their context figures; "
            f"{summary.unmatched} without an answering event; {len(summary.errors)} errors"
        )
