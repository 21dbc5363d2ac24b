"""``manage.py report --by session --json``: per-session token totals and cost, for scripts and checks."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.fleet.reports import session_report
from dashboard.worker.drain import followups_settle


class Command(BaseCommand):
    help = "Print token totals and the cost per session."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--by", choices=["session"], default="session")
        parser.add_argument(
            "--json", action="store_true", help="Print a JSON array (the default is a table)."
        )
        parser.add_argument("--source", help="Only sessions of this source.")

    def handle(self, *args: Any, **options: Any) -> None:
        # The costs come from the analyses: an ingest just before may have left them to its drain.
        followups_settle()
        rows = session_report(source=options["source"])
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        header = (
            f"{'session':40} {'requests':>8} {'input':>10} {'output':>10} {'write':>10} {'read':>12} "
            f"{'cost (USD)':>12}"
        )
        self.stdout.write(header)
        for row in rows:
            self.stdout.write(
                f"{row['session_id'][:40]:40} {row['requests']:>8} {row['input_tokens']:>10} "
                f"{row['output_tokens']:>10} {_figure(row['cache_creation_tokens']):>10} "
                f"{_figure(row['cache_read_tokens']):>12} {_cost(row):>12}"
            )
        partial = sorted(
            {model for row in rows if row["cost_usd"] is not None for model in row["unpriced_models"]}
        )
        if partial:
            self.stdout.write(f"* partial: no price for {', '.join(partial)}")


def _figure(value: int | None) -> str:
    """A sum, or "—" where no request reported it: unknown, not 0."""
    return "—" if value is None else str(value)


def _cost(row: dict[str, Any]) -> str:
    """The cost to the cent's hundredth, marked partial or named unpriced where a model has no price."""
    if row["cost_usd"] is None:
        return "no price"
    return f"{row['cost_usd']:.4f}" + ("*" if row["unpriced_requests"] else "")
