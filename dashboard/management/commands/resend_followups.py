"""``manage.py resend_followups``: enqueue the folds and analyses a cut-off ingest left in the outbox.

Run it from a timer (every few minutes); the ingestion API also resends a batch after each request.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.ingest.followups import RESEND_AFTER, RESEND_BATCH, followups_resend


class Command(BaseCommand):
    help = "Enqueue the follow-ups of sessions whose ingest committed but did not enqueue them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=int,
            default=int(RESEND_AFTER.total_seconds()),
            help="Only rows at least this many seconds old (default: %(default)s).",
        )
        parser.add_argument("--limit", type=int, default=RESEND_BATCH, help="At most this many sessions.")

    def handle(self, *args: Any, **options: Any) -> None:
        sent = followups_resend(older_than=timedelta(seconds=options["older_than"]), limit=options["limit"])
        self.stdout.write(f"enqueued the follow-ups of {sent} session(s)")
