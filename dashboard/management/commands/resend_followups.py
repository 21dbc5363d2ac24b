"""``manage.py resend_followups [--drain]``: enqueue the folds and analyses left in the outbox.

Run it from a timer (every few minutes); the ingestion API also resends a batch after each request.
``--drain`` takes every row, whatever its age, until none is left: where tasks run in-process it
runs them, one drain at a time, and is what ``manage.py ingest`` starts in the background.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.ingest.followups import RESEND_AFTER, RESEND_BATCH, followups_resend


class Command(BaseCommand):
    help = "Enqueue the follow-ups of sessions whose ingest committed but did not enqueue them."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=int,
            default=int(RESEND_AFTER.total_seconds()),
            help="Only rows at least this many seconds old (default: %(default)s).",
        )
        parser.add_argument("--limit", type=int, default=RESEND_BATCH, help="At most this many sessions.")
        parser.add_argument(
            "--drain",
            action="store_true",
            help="Every row, whatever its age, until none is left (after any drain already running).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["drain"]:
            from dashboard.worker.drain import outbox_drain

            sent = outbox_drain()
        else:
            sent = followups_resend(
                older_than=timedelta(seconds=options["older_than"]), limit=options["limit"]
            )
        self.stdout.write(f"enqueued the follow-ups of {sent} session(s)")
